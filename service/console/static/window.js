// ctxmem console, window preview: a budget's slider and its number field move together. The number field is
// the one the form sends, so the page works without this file; the slider is hidden until it runs.
(function () {
  "use strict";

  var sliders = document.querySelectorAll("input[type=range][data-mirror]");
  Array.prototype.forEach.call(sliders, function (slider) {
    slider.hidden = false;
  });

  document.addEventListener("input", function (event) {
    var source = event.target;
    if (!(source instanceof HTMLInputElement) || !source.dataset.mirror) {
      return;
    }
    var twin = document.getElementById(source.dataset.mirror);
    if (!(twin instanceof HTMLInputElement)) {
      return;
    }
    if (twin.type === "range") {
      var n = parseInt(source.value, 10);
      if (!isNaN(n)) {
        twin.value = String(Math.min(Math.max(n, Number(twin.min)), Number(twin.max)));
      }
    } else {
      twin.value = source.value;
    }
  });
})();
