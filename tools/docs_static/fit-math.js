// predictability docs: a display equation wider than the text column is set in a smaller font until it fits,
// instead of scrolling sideways (MathJax 3 has no automatic line breaking). Re-run when the window is resized.
// Once MathJax has typeset the page and the equations are fitted, <html> gets data-typeset="done": the signal
// that the page is as a reader sees it (the browser tests wait for it instead of guessing a delay).
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
  function done() {
    fit();
    document.documentElement.setAttribute('data-typeset', 'done');
  }
  function start() {
    // MathJax loads asynchronously: wait until it exists (its startup promise settles after the first typeset)
    var tries = 0;
    (function wait() {
      if (window.MathJax && MathJax.startup && MathJax.startup.promise) MathJax.startup.promise.then(done, done);
      else if (document.querySelector('.math') && tries++ < 600) setTimeout(wait, 50);
      else done();
    })();
  }
  if (document.readyState === 'complete') start(); else window.addEventListener('load', start);
  window.addEventListener('resize', fit);
})();
