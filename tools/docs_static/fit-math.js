// predictability docs: a display equation wider than the text column is set in a smaller font until it fits,
// instead of scrolling sideways (MathJax 3 has no automatic line breaking). Re-run when the window is resized.
(function () {
  function fit() {
    document.querySelectorAll('mjx-container[display="true"]').forEach(function (c) {
      c.style.fontSize = '';
      for (var k = 0; k < 8 && c.scrollWidth > c.clientWidth + 1; k++) {
        var f = Math.max(0.4, 0.98 * c.clientWidth / c.scrollWidth) * (parseFloat(c.style.fontSize) || 100);
        c.style.fontSize = f + '%';
      }
    });
  }
  function start() {
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) MathJax.startup.promise.then(fit);
    else setTimeout(fit, 500);
  }
  if (document.readyState === 'complete') start(); else window.addEventListener('load', start);
  window.addEventListener('resize', fit);
})();
