// The message pages' small behaviours, kept out of the pages for the Content-Security-Policy (scripts from this
// site only, none inline). Every page works without them: the tabs then show all views of a body one under the
// other, and a running search shows its progress as it was when the page was rendered (reload to refresh).
(function () {
  // A body's views (text, pretty JSON, hex): one shown at a time, chosen by its tab.
  function tabs(container) {
    var buttons = container.querySelectorAll("[data-tab]");
    function show(name) {
      buttons.forEach(function (button) {
        var on = button.getAttribute("data-tab") === name;
        button.setAttribute("aria-selected", on ? "true" : "false");
        button.classList.toggle("active", on);
        container.querySelector("#" + button.getAttribute("aria-controls")).hidden = !on;
      });
    }
    buttons.forEach(function (button) {
      button.hidden = false;
      button.addEventListener("click", function () { show(button.getAttribute("data-tab")); });
    });
    container.classList.add("tabs-ready");
    if (buttons.length) { show(buttons[0].getAttribute("data-tab")); }
  }

  // A running search: poll its JSON status every second, show the percentage, the count found and the note, and
  // reload the page (which then lists the hits) once the search has ended.
  function progress(panel) {
    var url = panel.getAttribute("data-status-url");
    var bar = panel.querySelector("progress");
    var percent = panel.querySelector("[data-percent]");
    var found = panel.querySelector("[data-found]");
    var note = panel.querySelector("[data-note]");
    function poll() {
      fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then(function (response) { return response.ok ? response.json() : Promise.reject(response.status); })
        .then(function (status) {
          bar.value = status.progress;
          percent.textContent = Math.floor(status.progress * 100) + "%";
          found.textContent = status.found;
          note.textContent = status.note || "";
          panel.setAttribute("data-state", status.state);
          if (status.finished) {
            window.location.reload();
          } else {
            window.setTimeout(poll, 1000);
          }
        })
        .catch(function () { window.setTimeout(poll, 5000); });
    }
    poll();
  }

  function start() {
    document.querySelectorAll("[data-tabs]").forEach(tabs);
    document.querySelectorAll("[data-status-url]").forEach(progress);
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
