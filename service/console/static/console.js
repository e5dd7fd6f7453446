// ctxmem console: small progressive enhancements. Every page works without this file.
(function () {
  "use strict";

  // A <select data-autosubmit> submits its form when changed (the form also has a submit button).
  document.addEventListener("change", function (event) {
    var target = event.target;
    if (target instanceof HTMLSelectElement && target.hasAttribute("data-autosubmit") && target.form) {
      target.form.requestSubmit();
    }
  });

  // A form with data-confirm="question" asks before it is sent.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (form instanceof HTMLFormElement && form.dataset.confirm && !window.confirm(form.dataset.confirm)) {
      event.preventDefault();
    }
  });

  // A range input with data-output="id" shows its value in that element as it moves.
  document.addEventListener("input", function (event) {
    var target = event.target;
    if (target instanceof HTMLInputElement && target.dataset.output) {
      var out = document.getElementById(target.dataset.output);
      if (out) {
        out.textContent = target.value;
      }
    }
  });
})();
