// #/graph/<id>: a memory's neighbourhood as SVG — the centre in the middle, each further
// hop on a wider ring, edges coloured and labelled by kind. Clicking a node re-centres on it.

import { h, s } from "../dom.js";
import { t, label } from "../i18n.js";
import { api } from "../api.js";
import { run, field, fill } from "../ui.js";

const RING = 130; // px between rings
const MARGIN = 90; // room for labels outside the last ring

const short = (text, n) => {
  const chars = Array.from(text || "");
  return chars.length > n ? `${chars.slice(0, n - 1).join("")}…` : chars.join("");
};

/** Hop count from the centre for each node (edges taken both ways) and who found it first. */
function hops(center, edges) {
  const depth = new Map([[center, 0]]);
  const parent = new Map();
  let frontier = [center];
  while (frontier.length) {
    const next = [];
    for (const id of frontier) {
      for (const e of edges) {
        const other = e.src === id ? e.dst : e.dst === id ? e.src : null;
        if (other !== null && !depth.has(other)) {
          depth.set(other, depth.get(id) + 1);
          parent.set(other, id);
          next.push(other);
        }
      }
    }
    frontier = next;
  }
  return { depth, parent };
}

/** Positions on concentric rings; a ring's nodes are ordered by their parent's angle so
 *  second-hop nodes sit near the node that links them. */
function layout(nodes, edges, center) {
  const { depth, parent } = hops(center, edges);
  const maxDepth = Math.max(1, ...nodes.map((n) => depth.get(n.id) ?? 1));
  const pos = new Map([[center, { x: 0, y: 0, angle: 0 }]]);
  for (let d = 1; d <= maxDepth; d++) {
    const ring = nodes.filter((n) => (depth.get(n.id) ?? maxDepth) === d && n.id !== center);
    ring.sort((a, b) => (pos.get(parent.get(a.id))?.angle ?? 0) - (pos.get(parent.get(b.id))?.angle ?? 0));
    ring.forEach((n, i) => {
      const angle = (2 * Math.PI * i) / ring.length - Math.PI / 2 + (d - 1) * 0.3;
      pos.set(n.id, { x: Math.cos(angle) * RING * d, y: Math.sin(angle) * RING * d, angle });
    });
  }
  return { pos, half: maxDepth * RING + MARGIN };
}

function drawGraph({ nodes: raw, edges, center }) {
  const nodes = raw.map((n) => ({ ...n, status: n.status || "active" })); // brief memories omit "active"
  const { pos, half } = layout(nodes, edges, center);
  const svg = s("svg", {
    id: "graph-svg", class: "graph", viewBox: `${-half} ${-half} ${2 * half} ${2 * half}`,
    role: "img", "aria-label": t("graph.title"),
  });
  for (const e of edges) {
    const a = pos.get(e.src);
    const b = pos.get(e.dst);
    if (!a || !b) continue;
    svg.append(s("g", { class: `edge edge-${e.kind}`, "data-kind": e.kind },
      s("line", { x1: a.x, y1: a.y, x2: b.x, y2: b.y, "stroke-width": 1 + 2 * (e.strength ?? 0.5) }),
      s("text", { x: (a.x + b.x) / 2, y: (a.y + b.y) / 2 - 4, "text-anchor": "middle" }, label("link", e.kind)),
      s("title", {}, `${label("link", e.kind)} (${e.strength ?? ""})`)));
  }
  for (const n of nodes) {
    const p = pos.get(n.id);
    if (!p) continue;
    const go = () => { location.hash = `#/graph/${encodeURIComponent(n.id)}`; };
    const node = s("g", {
      class: `node type-${n.type} status-${n.status}${n.id === center ? " center" : ""}`,
      "data-id": n.id, transform: `translate(${p.x} ${p.y})`, tabindex: 0, role: "link", "aria-label": n.content,
    },
    s("circle", { r: n.id === center ? 20 : 13 }),
    s("text", { y: n.id === center ? 36 : 28, "text-anchor": "middle" }, short(n.content, 18)),
    s("title", {}, `${n.content}\n${label("types", n.type)} · ${n.scope} · ${label("status", n.status)}`));
    node.addEventListener("click", go);
    node.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") go(); });
    svg.append(node);
  }
  return svg;
}

export async function graphPage(main, { arg: id, params }) {
  const depth = h("select", { id: "graph-depth", value: params.get("depth") || "2" },
    ["1", "2", "3"].map((d) => h("option", { value: d }, d)));
  const box = h("div", { class: "graph-box" }, h("p", {}, t("loading")));
  const list = h("ul", { id: "graph-nodes", class: "links" });
  main.append(h("h1", {}, t("graph.title")),
    h("div", { class: "actions" },
      h("a", { id: "graph-memory-link", class: "button", href: `#/memory/${encodeURIComponent(id)}` }, t("graph.memory")),
      field(t("graph.depth"), depth)),
    box, h("h2", {}, t("graph.nodes")), list);

  async function load() {
    const data = await api(`/memories/${encodeURIComponent(id)}/graph`, { query: { depth: depth.value } });
    box.replaceChildren(drawGraph(data), h("p", { class: "legend" },
      [...new Set(data.edges.map((e) => e.kind))].map((kind) => h("span", { class: `key edge-${kind}` }, label("link", kind)))));
    fill(list, data.nodes.map((n) => h("li", { dataset: { id: n.id } },
      h("a", { href: `#/memory/${encodeURIComponent(n.id)}` }, n.content),
      h("span", { class: "meta" }, ` · ${label("types", n.type)} · ${label("status", n.status || "active")}${n.id === data.center ? ` · ${t("graph.center")}` : ""}`))),
    t("none"));
  }

  depth.addEventListener("change", () => run(load));
  await run(load);
}
