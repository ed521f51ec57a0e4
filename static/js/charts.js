// Draws every [data-chart] figure with plotly.js (served from /static/plotly/plotly.min.js, no CDN).
(function () {
  function draw() {
    document.querySelectorAll("[data-chart]").forEach(function (figure) {
      var spec = JSON.parse(figure.querySelector("script[type='application/json']").textContent);
      var plot = figure.querySelector(".chart-plot");
      Plotly.newPlot(plot, spec.data, spec.layout, { responsive: true, displaylogo: false });
      figure.setAttribute("data-drawn", "true");
    });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", draw);
  } else {
    draw();
  }
})();
