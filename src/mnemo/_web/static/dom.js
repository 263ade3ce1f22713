// Small DOM helpers. Everything user-supplied enters the page as text nodes, never as HTML:
// the strict CSP forbids inline script, and memories may contain markup on purpose.

const SVG_NS = "http://www.w3.org/2000/svg";

function build(el, attrs, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  // Attributes after children, so a <select>'s value can name one of its options.
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "text") el.textContent = value;
    else if (key === "value") el.value = value;
    else if (key === "class") el.setAttribute("class", value);
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else if (key in el && typeof value !== "string" && !(el instanceof SVGElement)) el[key] = value;
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  return el;
}

/** An HTML element: h("a", {href: "#/x", class: "y"}, "text", otherNode). */
export function h(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}

/** An SVG element, same calling convention as h(). */
export function s(tag, attrs, ...children) {
  return build(document.createElementNS(SVG_NS, tag), attrs, children);
}

/** Text with each occurrence of `terms` wrapped in <mark>, as a fragment of text nodes. */
export function highlight(text, terms) {
  const frag = document.createDocumentFragment();
  const words = [...new Set((terms || []).filter((w) => w && w.trim()))].sort((a, b) => b.length - a.length);
  if (!words.length) {
    frag.append(text);
    return frag;
  }
  const escaped = words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  // A capturing split keeps the matches at the odd indexes.
  text.split(new RegExp(`(${escaped.join("|")})`, "iu")).forEach((part, i) => {
    if (part) frag.append(i % 2 ? h("mark", {}, part) : part);
  });
  return frag;
}

/** Run fn at most once per `ms` of quiet (search-as-you-type). */
export function debounce(fn, ms) {
  let timer;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}

/** A comma separated tag field's value as a clean list (a Chinese comma counts too). */
export function splitTags(value) {
  return value.split(/[,，]+/).map((t) => t.trim()).filter(Boolean);
}
