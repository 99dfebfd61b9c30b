// Line charts on uPlot: one series per name (a trial, a metric), x = batches. Points arrive as a
// first load (downsampled by the server) and then one by one from the stream; a point at batches
// not after the series' last is one already drawn and is skipped, so a resumed stream never
// draws a point twice. Redraws are batched to one per animation frame.

const COLORS = ["#2456c9", "#d9480f", "#2b8a3e", "#ae3ec9", "#e67700", "#0b7285", "#c2255c", "#5c940d",
                "#364fc7", "#862e9c", "#a61e4d", "#087f5b"];

// TensorBoard's smoothing: an exponential moving average, debiased at the start.
function smoothed(ys, weight) {
  if (!weight) return ys;
  let last = 0, n = 0;
  return ys.map((y) => {
    if (y === null || !Number.isFinite(y)) return y;
    last = last * weight + (1 - weight) * y;
    n++;
    return last / (1 - Math.pow(weight, n));
  });
}

export class LineChart {
  constructor(container, { title = "", yLabel = "", height = 300, onZoom = null } = {}) {
    this.container = container;
    this.title = title;
    this.yLabel = yLabel;
    this.height = height;
    this.onZoom = onZoom;
    this.series = new Map();  // name -> {xs, ys}
    this.log = false;
    this.smoothing = 0;
    this.plot = null;
    this.pending = false;
    this.zoomed = false;  // a drag zoomed in: redraws keep the user's range
  }

  // Replaces a series' points (a first load, or a zoomed range at full resolution).
  set(name, xs, ys) {
    this.series.set(name, { xs: xs.map(Number), ys: ys.map(Number) });
    this.schedule();
  }

  append(name, x, y) {
    let s = this.series.get(name);
    if (!s) this.series.set(name, (s = { xs: [], ys: [] }));
    if (s.xs.length && x <= s.xs[s.xs.length - 1]) return;
    s.xs.push(Number(x));
    s.ys.push(Number(y));
    this.schedule();
  }

  setLog(on) { this.log = on; this.rebuild(); }
  setSmoothing(w) { this.smoothing = w; this.schedule(); }
  points() { let n = 0; for (const s of this.series.values()) n += s.xs.length; return n; }

  schedule() {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => { this.pending = false; this.draw(); });
  }

  aligned() {
    const names = [...this.series.keys()];
    const xset = new Set();
    for (const s of this.series.values()) for (const x of s.xs) xset.add(x);
    const xs = [...xset].sort((a, b) => a - b);
    const at = new Map(xs.map((x, i) => [x, i]));
    const columns = names.map((n) => {
      const s = this.series.get(n);
      const col = new Array(xs.length).fill(null);
      s.xs.forEach((x, i) => { const y = s.ys[i]; col[at.get(x)] = this.log && !(y > 0) ? null : y; });
      return smoothed(col, this.smoothing);
    });
    return { names, data: [xs, ...columns] };
  }

  rebuild() { if (this.plot) { this.plot.destroy(); this.plot = null; } this.draw(); }

  draw() {
    const { names, data } = this.aligned();
    // What the browser tests read: how many series and points the chart holds.
    this.container.dataset.series = String(names.length);
    this.container.dataset.points = String(this.points());
    this.container.dataset.lastX = String(data[0].length ? data[0][data[0].length - 1] : "");
    const width = Math.max(320, this.container.clientWidth || 600);
    if (this.plot && this.plot.series.length - 1 === names.length) {
      this.plot.setData(data, !this.zoomed);
      return;
    }
    if (this.plot) this.plot.destroy();
    const opts = {
      title: this.title, width, height: this.height,
      scales: { x: { time: false }, y: { distr: this.log ? 3 : 1 } },
      axes: [{ label: "batches" }, { label: this.yLabel }],
      series: [{ label: "batches" }, ...names.map((n, i) => ({
        label: n, stroke: COLORS[i % COLORS.length], width: 1.5, spanGaps: true, points: { show: false } }))],
      hooks: { setSelect: [(u) => this.zoomTo(u)] },
      cursor: { drag: { x: true, y: false } },
    };
    this.container.replaceChildren();
    this.plot = new uPlot(opts, data, this.container);
  }

  // A drag selects a range of batches: the chart zooms there and, given onZoom, loads the range
  // at full resolution. A double click (uPlot's) zooms back out.
  zoomTo(u) {
    if (u.select.width < 5) return;
    const min = u.posToVal(u.select.left, "x"), max = u.posToVal(u.select.left + u.select.width, "x");
    this.zoomed = true;
    if (this.onZoom) this.onZoom(Math.floor(min), Math.ceil(max));
  }
}

// A scatter of points {x, y, label} (a hyperparameter against the searcher metric).
export function scatterChart(container, title, points, { xLabel = "", yLabel = "" } = {}) {
  const sorted = [...points].sort((a, b) => a.x - b.x);
  const data = [sorted.map((p) => p.x), sorted.map((p) => p.y)];
  container.innerHTML = "";
  return new uPlot({
    title, width: Math.max(280, container.clientWidth || 320), height: 240,
    scales: { x: { time: false } },
    axes: [{ label: xLabel }, { label: yLabel }],
    series: [{}, { label: yLabel, stroke: "#2456c9", paths: () => null, points: { show: true, size: 7, fill: "#2456c9" } }],
    legend: { show: false },
  }, data, container);
}
