// #/timeline: memories newest first, grouped by local day; the next page loads when the
// sentinel at the bottom scrolls into view.

import { h } from "../dom.js";
import { t, fmtDay } from "../i18n.js";
import { api } from "../api.js";
import { run, filterBar, memoryItem, infoOrNull } from "../ui.js";

const PAGE = 50;

export async function timelinePage(main, { signal }) {
  const info = await infoOrNull();
  if (signal.aborted) return;
  const days = h("div", { id: "days" });
  const sentinel = h("p", { id: "timeline-sentinel", class: "sentinel" });
  let offset = 0;
  let loading = false;
  let generation = 0; // bumped by a filter change so a page still in flight is dropped

  /** The list for one day, created the first time that day appears. */
  function dayList(day) {
    let section = days.querySelector(`section[data-day="${day}"]`);
    if (!section) {
      section = h("section", { class: "day", dataset: { day } }, h("h2", {}, day), h("ul", { class: "hits" }));
      days.append(section);
    }
    return section.querySelector("ul");
  }

  async function more() {
    if (loading || offset === null) return;
    loading = true;
    const mine = generation;
    sentinel.textContent = t("loading");
    const ok = await run(async () => {
      const data = await api("/memories", { query: { ...filters.values(), limit: PAGE, offset } });
      if (mine !== generation) return;
      for (const mem of data.results) dayList(fmtDay(mem.created_at || mem.created)).append(memoryItem(mem));
      offset = data.next_offset ?? null;
      if (offset === null) sentinel.textContent = days.childElementCount ? t("end") : t("none");
      return true;
    });
    loading = false;
    if (mine !== generation) return;
    if (!ok) {
      // No automatic retry after a failure (it would loop while the server is down).
      sentinel.replaceChildren(h("button", { type: "button", onclick: more }, t("more")));
    } else if (offset !== null) {
      sentinel.textContent = "";
      // A short page may leave the sentinel visible; the observer won't fire again for it.
      if (sentinel.getBoundingClientRect().top < window.innerHeight) more();
    }
  }

  function reset() {
    generation += 1;
    loading = false;
    offset = 0;
    days.replaceChildren();
    more();
  }

  const filters = filterBar(info, ["active", "all", "superseded", "archived", "expired", "deleted"], reset);
  main.append(h("h1", {}, t("timeline.title")), filters.el, days, sentinel);
  const observer = new IntersectionObserver((entries) => {
    if (entries.some((e) => e.isIntersecting)) more();
  }, { rootMargin: "200px" });
  observer.observe(sentinel);
  signal.addEventListener("abort", () => observer.disconnect());
  more();
}
