// #/ingest: upload files (drop zone or file picker) one by one to /ingest, then the list
// of sources with re-ingest and remove.

import { h, splitTags } from "../dom.js";
import { t, fmtDate } from "../i18n.js";
import { api } from "../api.js";
import { notify, run, field, fill } from "../ui.js";

function size(bytes) {
  if (typeof bytes !== "number") return "";
  return bytes < 1024 ? `${bytes} B` : bytes < 1048576 ? `${(bytes / 1024).toFixed(1)} KB` : `${(bytes / 1048576).toFixed(1)} MB`;
}

export async function ingestPage(main) {
  const input = h("input", { id: "ingest-file", type: "file", multiple: true });
  const scope = h("input", { id: "ingest-scope", type: "text", placeholder: t("add.scope.placeholder") });
  const tags = h("input", { id: "ingest-tags", type: "text" });
  const zone = h("div", { id: "drop-zone", class: "drop-zone" }, h("p", {}, t("ingest.drop")), field(t("ingest.file"), input));
  const results = h("ul", { id: "ingest-results", "aria-live": "polite" });
  const sources = h("ul", { id: "sources", class: "sources" });

  async function upload(files) {
    for (const file of files) {
      const line = h("li", {}, t("ingest.uploading", { name: file.name }));
      results.prepend(line);
      const ok = await run(async () => {
        const data = await api("/ingest", {
          method: "POST", body: file,
          query: { filename: file.name, scope: scope.value.trim(), tags: splitTags(tags.value).join(",") },
        });
        line.replaceChildren(t("ingest.result", { name: file.name, ingested: data.ingested, chunks: data.chunks }),
          ...(data.skipped || []).map((sk) => h("div", { class: "meta" }, t("ingest.skipped", sk))));
        line.classList.add("ok");
        return true;
      });
      if (!ok) line.classList.add("failed");
    }
    input.value = "";
    await run(loadSources);
  }

  function sourceItem(src) {
    const remove = h("button", { type: "button", class: "remove danger" }, t("ingest.remove"));
    // Removing drops the source's memories: the first click arms, the second removes.
    remove.addEventListener("click", () => {
      if (!remove.classList.contains("armed")) {
        remove.classList.add("armed");
        remove.textContent = t("ingest.remove.confirm");
        return;
      }
      run(async () => {
        await api("/sources/remove", { method: "POST", body: { key: src.key } });
        notify(t("ingest.removed"));
        await loadSources();
      }, remove);
    });
    const resync = h("button", {
      type: "button", class: "resync",
      onclick: (e) => run(async () => {
        await api("/sources/resync", { method: "POST", body: { key: src.key } });
        notify(t("ingest.resynced"));
        await loadSources();
      }, e.currentTarget),
    }, t("ingest.resync"));
    return h("li", { class: "source", dataset: { key: src.key } },
      h("p", {}, h("strong", {}, src.title || src.key)),
      h("p", { class: "meta" }, [src.kind, t("ingest.chunks", { n: src.chunks }), src.status, size(src.size), fmtDate(src.mtime)]
        .filter(Boolean).join(" · ")),
      src.title && src.title !== src.key ? h("p", { class: "meta key" }, src.key) : null,
      h("div", { class: "actions" }, resync, remove));
  }

  async function loadSources() {
    const data = await api("/sources");
    fill(sources, data.results.map(sourceItem), t("ingest.nosources"));
  }

  input.addEventListener("change", () => upload([...input.files]));
  zone.addEventListener("dragover", (e) => {
    e.preventDefault();
    zone.classList.add("over");
  });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", (e) => {
    e.preventDefault();
    zone.classList.remove("over");
    upload([...e.dataTransfer.files]);
  });

  main.append(h("h1", {}, t("ingest.title")),
    h("div", { class: "row" }, field(t("ingest.scope"), scope), field(t("ingest.tags"), tags)),
    zone, results, h("h2", {}, t("ingest.sources")), sources);
  await run(loadSources);
}
