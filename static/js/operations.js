// A running message operation on its application's page: poll its JSON progress every two seconds, show the
// counts and the percentage, and reload the page (which then lists every message's state) once nothing is left to
// go. Kept out of the page for the Content-Security-Policy; without it the page shows the progress as it was when
// rendered (reload to refresh).
(function () {
  function follow(panel) {
    var url = panel.getAttribute("data-progress-url");
    var bar = panel.querySelector("progress");
    var fields = ["sent", "failed", "pending", "total"];
    function poll() {
      fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then(function (response) { return response.ok ? response.json() : Promise.reject(response.status); })
        .then(function (status) {
          bar.value = status.fraction;
          panel.querySelector("[data-percent]").textContent = Math.floor(status.fraction * 100) + "%";
          fields.forEach(function (name) { panel.querySelector("[data-" + name + "]").textContent = status[name]; });
          if (status.running) {
            window.setTimeout(poll, 2000);
          } else {
            window.location.reload();
          }
        })
        .catch(function () { window.setTimeout(poll, 10000); });
    }
    window.setTimeout(poll, 2000);
  }

  function start() {
    document.querySelectorAll("[data-progress-url]").forEach(follow);
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
