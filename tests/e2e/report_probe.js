// Test-only layout probe for the HTML report (never part of a report: the e2e tests inject it
// into a copy of the page). After load it measures what the browser laid out and writes one
// finding per line into <pre id="probe-findings"> between PROBE-BEGIN and PROBE-END, which
// `chromium --headless --dump-dom` returns. An empty list means nothing overflowed.
//   page <w>            the page is wider than the window (a horizontal page scroll bar)
//   frame <table> <w>   a table is wider than its frame (.table-wrap scrolls sideways)
//   text <tag> "<t>"    an element's content is wider than its box (spills or is clipped)
//   chart <kind> "<t>"  an SVG text lies outside its chart's viewBox
//   legend <kind> "<t>" two legend entries of a chart overlap
//   sla <kind> <n>      a latency chart has n SLA lines (reported for every ttft/tpot chart)
(function () {
  function label(table) {
    if (!table) return '?';
    if (table.id) return table.id;
    return table.className + '[' + (table.getAttribute('data-target') || '') + ']';
  }
  function intersects(a, b) {
    return a.x < b.x + b.width - 0.5 && b.x < a.x + a.width - 0.5 &&
        a.y < b.y + b.height - 0.5 && b.y < a.y + a.height - 0.5;
  }
  function run() {
    var out = [];
    var width = window.innerWidth;
    var root = document.documentElement;
    if (root.scrollWidth > width + 1) out.push('page ' + root.scrollWidth + ' in ' + width);
    document.querySelectorAll('.table-wrap').forEach(function (wrap) {
      if (wrap.scrollWidth > wrap.clientWidth + 1)
        out.push('frame ' + label(wrap.querySelector('table')) + ' ' + wrap.scrollWidth + ' in ' +
                 wrap.clientWidth);
    });
    document.querySelectorAll('td, th, p, h1, h2, h3, dd, dt, figcaption, .badge')
        .forEach(function (e) {
          if (getComputedStyle(e).display === 'inline') return;
          if (e.scrollWidth > e.clientWidth + 1)
            out.push('text ' + e.tagName.toLowerCase() + ' "' + e.textContent.slice(0, 50) +
                     '" ' + e.scrollWidth + ' in ' + e.clientWidth);
        });
    document.querySelectorAll('svg.chart').forEach(function (svg) {
      var kind = svg.getAttribute('data-chart');
      var box = svg.viewBox.baseVal;
      svg.querySelectorAll('text').forEach(function (t) {
        if (t.hasAttribute('transform')) return;  // the rotated y title: its own frame
        var b = t.getBBox();
        if (b.x < -0.5 || b.y < -0.5 || b.x + b.width > box.width + 0.5 ||
            b.y + b.height > box.height + 0.5)
          out.push('chart ' + kind + ' "' + t.textContent.slice(0, 50) + '"');
      });
      var items = Array.prototype.slice.call(svg.querySelectorAll('g.legend-item'));
      for (var i = 0; i < items.length; ++i) {
        for (var j = i + 1; j < items.length; ++j) {
          if (intersects(items[i].getBBox(), items[j].getBBox()))
            out.push('legend ' + kind + ' "' + items[i].textContent + '" / "' +
                     items[j].textContent + '"');
        }
      }
      if (/^(ttft|tpot)-vs-/.test(kind))
        out.push('sla ' + kind + ' ' + svg.querySelectorAll('line.threshold').length);
    });
    var pre = document.createElement('pre');
    pre.id = 'probe-findings';
    pre.textContent = 'PROBE-' + 'BEGIN\n' + out.join('\n') + '\nPROBE-' + 'END';
    document.body.appendChild(pre);
  }
  if (document.readyState === 'complete')
    run();
  else
    window.addEventListener('load', run);
})();
