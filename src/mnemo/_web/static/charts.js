// Bar charts as inline SVG, no library. Every bar carries its number twice: a data-value
// attribute and a <title> (the tooltip), so the figures are readable without the picture.

import { s } from "./dom.js";

const W = 640; // viewBox width; the SVG scales to its box
const PALETTE = 10; // CSS classes c0…c9 colour bars and legend swatches

export const colourClass = (i) => `c${i % PALETTE}`;

/**
 * Vertical bars, one per label, stacked by series.
 * series: [{name, label, values: [n per label], cls?}]; labels: x-axis text. `cls` fixes a
 * series' colour class (so a type keeps its colour across charts); by default its position.
 */
export function stackedBars(labels, series, { id, title }) {
  const H = 260;
  const left = 40;
  const bottom = 34;
  const top = 16;
  const totals = labels.map((_, i) => series.reduce((sum, ser) => sum + (ser.values[i] || 0), 0));
  const max = Math.max(1, ...totals);
  const plotH = H - top - bottom;
  const step = (W - left - 8) / Math.max(1, labels.length);
  const barW = Math.max(4, step * 0.7);
  const y = (v) => top + plotH - (v / max) * plotH;
  const svg = s("svg", { id, class: "chart", viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": title },
    s("title", {}, title));
  for (const v of new Set([0, Math.round(max / 2), max])) {
    svg.append(s("line", { class: "grid", x1: left, x2: W - 4, y1: y(v), y2: y(v) }),
      s("text", { class: "axis", x: left - 6, y: y(v) + 4, "text-anchor": "end" }, String(v)));
  }
  labels.forEach((lab, i) => {
    const x = left + i * step + (step - barW) / 2;
    let base = 0;
    series.forEach((ser, k) => {
      const v = ser.values[i] || 0;
      if (!v) return;
      svg.append(s("rect", {
        class: `bar ${ser.cls || colourClass(k)}`, x, width: barW, y: y(base + v), height: y(base) - y(base + v),
        "data-value": v, "data-series": ser.name, "data-label": lab,
      }, s("title", {}, `${ser.label} · ${lab}: ${v}`)));
      base += v;
    });
    if (totals[i]) svg.append(s("text", { class: "total", x: x + barW / 2, y: y(totals[i]) - 3, "text-anchor": "middle" }, String(totals[i])));
    svg.append(s("text", { class: "axis", x: x + barW / 2, y: H - bottom + 16, "text-anchor": "middle" }, lab));
  });
  return svg;
}

/** Horizontal bars for named counts: [{name, label, value, cls?}], label and number beside each. */
export function hBars(rows, { id, title }) {
  const rowH = 26;
  const labelW = 190;
  const H = Math.max(1, rows.length) * rowH + 8;
  const max = Math.max(1, ...rows.map((r) => r.value));
  const span = W - labelW - 60;
  const svg = s("svg", { id, class: "chart", viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": title },
    s("title", {}, title));
  rows.forEach((row, i) => {
    const yTop = 4 + i * rowH;
    const text = Array.from(row.label);
    svg.append(
      s("text", { class: "axis", x: labelW - 8, y: yTop + 17, "text-anchor": "end" },
        text.length > 24 ? `${text.slice(0, 23).join("")}…` : row.label),
      s("rect", {
        class: `bar ${row.cls || colourClass(i)}`, x: labelW, y: yTop + 3, height: rowH - 8, width: Math.max(1, (row.value / max) * span),
        "data-value": row.value, "data-series": row.name,
      }, s("title", {}, `${row.label}: ${row.value}`)),
      s("text", { class: "total", x: labelW + (row.value / max) * span + 6, y: yTop + 17 }, String(row.value)));
  });
  return svg;
}
