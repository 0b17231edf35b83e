// paravt view: filter and sort the index table, open an episode by clicking its row.
// It reads only the table's own cells and data- attributes (written escaped by paravt), and
// writes only textContent and style.display: no model text ever becomes markup here.
(function () {
  "use strict";
  var table = document.getElementById("episodes");
  if (!table) { return; }
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  var get = function (id) { return document.getElementById(id); };
  var controls = ["f-text", "f-run", "f-type", "f-correct", "f-error"];

  function apply() {
    var text = get("f-text").value.toLowerCase();
    var run = get("f-run").value, type = get("f-type").value;
    var correct = get("f-correct").value, error = get("f-error").value;
    var shown = 0;
    rows.forEach(function (tr) {
      var d = tr.dataset;
      var ok = (!text || tr.textContent.toLowerCase().indexOf(text) >= 0) &&
        (!run || d.run === run) && (!type || d.type === type) &&
        (!correct || d.correct === correct) &&
        (!error || (error === "any" ? d.error !== "" : d.error === ""));
      tr.style.display = ok ? "" : "none";
      if (ok) { shown += 1; }
    });
    get("shown").textContent = shown + " of " + rows.length + " shown";
  }

  controls.forEach(function (id) {
    get(id).addEventListener("input", apply);
    get(id).addEventListener("change", apply);
  });

  var order = {};
  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
    th.addEventListener("click", function () {
      var col = Number(th.dataset.col);
      order[col] = !order[col];
      var dir = order[col] ? 1 : -1;
      rows.sort(function (a, b) {
        var x = a.cells[col].textContent, y = b.cells[col].textContent;
        var nx = parseFloat(x), ny = parseFloat(y);
        if (!isNaN(nx) && !isNaN(ny)) { return dir * (nx - ny); }
        return dir * x.localeCompare(y);
      });
      rows.forEach(function (tr) { body.appendChild(tr); });
    });
  });

  rows.forEach(function (tr) {
    tr.addEventListener("click", function (ev) {
      if (ev.target.tagName !== "A") { window.location.href = tr.dataset.href; }
    });
  });
  apply();
})();
