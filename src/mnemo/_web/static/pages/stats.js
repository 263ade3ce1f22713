// #/stats: totals and charts from /stats — weekly creations by type, totals by type and
// scope, context injections per week, and today's LLM usage.

import { h } from "../dom.js";
import { t, label } from "../i18n.js";
import { api } from "../api.js";
import { run, TYPES } from "../ui.js";
import { stackedBars, hBars, colourClass } from "../charts.js";

function bytes(n) {
  if (typeof n !== "number") return "—";
  return n < 1048576 ? `${(n / 1024).toFixed(1)} KB` : `${(n / 1048576).toFixed(1)} MB`;
}

/** Sum of calls and tokens over the kinds of one day's LLM usage. */
function usage(day) {
  let calls = 0;
  let tokens = 0;
  for (const u of Object.values(day || {})) {
    calls += u.calls || 0;
    tokens += u.tokens || 0;
  }
  return { calls, tokens };
}

/** Each type keeps one colour in every chart. */
const typeClass = (type) => colourClass(Math.max(0, TYPES.indexOf(type)));

function legend(series) {
  return h("ul", { class: "legend" }, series.map((ser) => h("li", {}, h("span", { class: `swatch ${ser.cls}` }), ser.label)));
}

function totals(stats) {
  const today = usage(stats.llm_usage?.today);
  const rows = [
    ["stat-total", "stats.total", stats.total],
    ["stat-last7", "stats.last7", stats.last_7_days],
    ["stat-size", "stats.size", bytes(stats.store_bytes)],
    ["stat-vectors", "stats.vectors", stats.vectors],
    ["stat-model", "stats.model", stats.model],
    ["stat-llm-calls", "stats.llm_calls", today.calls],
    ["stat-llm-tokens", "stats.llm_tokens", today.tokens],
  ];
  return h("dl", { class: "totals" }, rows.map(([id, key, value]) =>
    h("div", {}, h("dt", {}, t(key)), h("dd", { id }, value === undefined || value === null ? "—" : String(value)))));
}

/** A chart under its heading; the heading names the chart for screen readers too. */
const section = (title, ...content) => h("section", { class: "chart-box" }, h("h2", {}, title), ...content);

export async function statsPage(main) {
  const body = h("div", {}, h("p", {}, t("loading")));
  main.append(h("h1", {}, t("stats.title")), body);
  await run(async () => {
    const stats = await api("/stats");
    const act = stats.activity || {};
    const weeks = (act.weeks || []).map((w) => String(w).slice(5, 10)); // Monday dates, "MM-DD"
    const byTypeWeekly = Object.entries(act.created_by_type || {})
      .map(([type, values]) => ({ name: type, label: label("types", type), values, cls: typeClass(type) }));
    const named = (obj, name, cls) => Object.entries(obj || {}).sort((a, b) => b[1] - a[1])
      .map(([key, value]) => ({ name: key, label: name(key), value, cls: cls?.(key) }));
    body.replaceChildren(
      totals(stats),
      section(t("stats.weekly"),
        stackedBars(weeks, byTypeWeekly, { id: "chart-weekly", title: t("stats.weekly") }), legend(byTypeWeekly)),
      section(t("stats.by_type"), hBars(named(stats.by_type, (k) => label("types", k), typeClass), { id: "chart-type", title: t("stats.by_type") })),
      section(t("stats.by_scope"), hBars(named(stats.by_scope, (k) => k), { id: "chart-scope", title: t("stats.by_scope") })),
      section(t("stats.injections"), stackedBars(weeks,
        [{ name: "injections", label: t("stats.injections"), values: act.injections || [] }],
        { id: "chart-injections", title: t("stats.injections") })),
      section(t("stats.by_status"), h("ul", { id: "stat-status", class: "inline-list" },
        Object.entries(stats.by_status || {}).map(([st, n]) =>
          h("li", { dataset: { status: st, value: n } }, `${label("status", st)}: ${n}`)))));
  });
}
