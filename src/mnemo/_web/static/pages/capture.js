// #/capture: paste a conversation, preview what mnemo would remember, untick what it
// shouldn't, save the rest.

import { h } from "../dom.js";
import { t, label } from "../i18n.js";
import { api } from "../api.js";
import { notify, run, field, fill } from "../ui.js";

export async function capturePage(main) {
  const text = h("textarea", { id: "capture-text", rows: 8 });
  const scope = h("input", { id: "capture-scope", type: "text", placeholder: t("add.scope.placeholder") });
  const preview = h("button", { id: "capture-preview", type: "submit", class: "primary" }, t("capture.preview"));
  const list = h("ul", { id: "capture-list", class: "hits" });
  const save = h("button", { id: "capture-save", type: "button", hidden: true }, t("capture.save"));
  const result = h("div", { id: "capture-result", "aria-live": "polite" });
  let detected = [];

  const scopeBody = () => (scope.value.trim() ? { scope: scope.value.trim() } : {});

  async function doPreview(event) {
    event.preventDefault();
    await run(async () => {
      const data = await api("/capture/preview", { method: "POST", body: { text: text.value, ...scopeBody() } });
      detected = data.detected;
      result.replaceChildren();
      fill(list, detected.map((item, i) => h("li", { class: "detected" },
        h("label", { class: "check" },
          h("input", { type: "checkbox", class: "capture-item", checked: true, dataset: { index: i } }),
          h("span", { class: "memory-text" }, item.content)),
        h("p", { class: "meta" },
          h("span", { class: `badge type-${item.type}` }, label("types", item.type)),
          ` ${t("capture.confidence")} ${Math.round((item.confidence ?? 0) * 100)}%`,
          (item.tags || []).map((tag) => h("span", { class: "tag" }, ` #${tag}`))))), t("capture.none"));
      save.hidden = !detected.length;
    }, preview);
  }

  async function doSave() {
    const items = [...list.querySelectorAll(".capture-item")].filter((box) => box.checked)
      .map((box) => detected[Number(box.dataset.index)]);
    if (!items.length) {
      notify(t("capture.nothing"), "error");
      return;
    }
    await run(async () => {
      const data = await api("/capture/save", { method: "POST", body: { items, ...scopeBody() } });
      result.replaceChildren(h("p", {}, t("capture.saved", { n: data.saved.length })),
        h("ul", { class: "saved" }, data.saved.map((s) => h("li", { dataset: { id: s.memory.id } },
          h("strong", {}, label("action", s.action)), " · ",
          h("a", { href: `#/memory/${encodeURIComponent(s.memory.id)}` }, s.memory.content)))));
      list.replaceChildren();
      detected = [];
      save.hidden = true;
      notify(t("capture.saved", { n: data.saved.length }));
    }, save);
  }

  save.addEventListener("click", doSave);
  main.append(
    h("h1", {}, t("capture.title")),
    h("form", { class: "stack", onsubmit: doPreview },
      field(t("capture.text"), text), field(t("add.scope"), scope), h("div", { class: "actions" }, preview)),
    list, h("div", { class: "actions" }, save), result);
}
