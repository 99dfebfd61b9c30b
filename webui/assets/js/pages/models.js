// The model registry: its models, and one model's versions with the checkpoints they point at.

import { ApiError, get } from "../api.js";
import { h, link, notFound, table, time } from "../dom.js";

export async function render(page, [name]) {
  if (!name) {
    const models = (await get("/api/v1/models")).models || [];
    page.append(h("h1", {}, "Models"), table([
      { title: "Name", cell: (m) => link(`/models/${encodeURIComponent(m.name)}`, m.name) },
      { title: "Description", cell: (m) => m.description }, { title: "Labels", cell: (m) => (m.labels || []).join(", ") },
      { title: "Owner", cell: (m) => m.owner }, { title: "Versions", cell: (m) => m.num_versions || 0 },
      { title: "Created", cell: (m) => time(m.created_at) },
    ], models, { rowAttrs: (m) => ({ "data-model": m.name }) }));
    return;
  }
  let out;
  try {
    out = await get(`/api/v1/models/${encodeURIComponent(name)}`);
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) { page.append(notFound(`Model ${name}`)); return; }
    throw e;
  }
  page.append(h("h1", {}, `Model ${out.model.name}`), h("p", { class: "muted" }, out.model.description || ""),
    table([
      { title: "Version", cell: (v) => v.version }, { title: "Name", cell: (v) => v.name },
      { title: "Checkpoint", cell: (v) => h("code", {}, v.checkpoint_uuid) }, { title: "Metadata", cell: (v) => v.metadata },
      { title: "Owner", cell: (v) => v.owner }, { title: "Created", cell: (v) => time(v.created_at) },
    ], out.versions || [], { rowAttrs: (v) => ({ "data-version": v.version }) }));
}
