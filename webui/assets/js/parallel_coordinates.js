// Parallel coordinates on a canvas: one vertical axis per hyperparameter and the searcher metric
// last, one polyline per trial, coloured by the metric (blue good, red bad). Categorical values
// are spread evenly along their axis.

export function parallelCoordinates(canvas, dimensions, rows, { smallerIsBetter = true } = {}) {
  const ratio = window.devicePixelRatio || 1;
  const width = canvas.clientWidth || 800, height = canvas.clientHeight || 320;
  canvas.width = width * ratio;
  canvas.height = height * ratio;
  const ctx = canvas.getContext("2d");
  ctx.scale(ratio, ratio);
  ctx.clearRect(0, 0, width, height);
  const top = 28, bottom = height - 24, left = 60, right = width - 60;
  const step = dimensions.length > 1 ? (right - left) / (dimensions.length - 1) : 0;
  const scales = dimensions.map((d) => {
    const values = rows.map((r) => r[d]).filter((v) => v !== undefined && v !== null);
    if (values.every((v) => typeof v === "number")) {
      const lo = Math.min(...values), hi = Math.max(...values);
      return { pos: (v) => (hi === lo ? 0.5 : (v - lo) / (hi - lo)), ticks: [[lo, 0], [hi, 1]] };
    }
    const cats = [...new Set(values.map(String))].sort();
    return { pos: (v) => (cats.length === 1 ? 0.5 : cats.indexOf(String(v)) / (cats.length - 1)),
             ticks: cats.map((c, i) => [c, cats.length === 1 ? 0.5 : i / (cats.length - 1)]) };
  });
  const y = (p) => bottom - p * (bottom - top);
  const metric = dimensions[dimensions.length - 1];
  const mscale = scales[scales.length - 1];
  ctx.lineWidth = 1.5;
  for (const r of rows) {
    if (r[metric] === undefined || r[metric] === null) continue;
    const goodness = smallerIsBetter ? 1 - mscale.pos(r[metric]) : mscale.pos(r[metric]);
    ctx.strokeStyle = `rgba(${Math.round(220 * (1 - goodness))}, 70, ${Math.round(220 * goodness)}, 0.75)`;
    ctx.beginPath();
    dimensions.forEach((d, i) => {
      const py = y(scales[i].pos(r[d]));
      if (i === 0) ctx.moveTo(left + i * step, py); else ctx.lineTo(left + i * step, py);
    });
    ctx.stroke();
  }
  ctx.fillStyle = "#1d2330";
  ctx.strokeStyle = "#6b7588";
  ctx.lineWidth = 1;
  ctx.font = "12px system-ui";
  ctx.textAlign = "center";
  dimensions.forEach((d, i) => {
    const x = left + i * step;
    ctx.beginPath(); ctx.moveTo(x, top); ctx.lineTo(x, bottom); ctx.stroke();
    ctx.fillText(d, x, top - 10);
    for (const [label, p] of scales[i].ticks) {
      ctx.fillText(typeof label === "number" ? String(+label.toPrecision(3)) : label, x, y(p) + (p === 0 ? 14 : p === 1 ? -4 : 4));
    }
  });
  canvas.dataset.lines = String(rows.filter((r) => r[metric] !== undefined && r[metric] !== null).length);
}
