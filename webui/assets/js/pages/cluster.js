// The cluster: agents and what runs on each slot, resource pools, and each pool's job queue,
// whose priority and weight an experiment's owner or an admin edits here. Read every 2 s (the
// answers come from the master's memory, not the database).

import { get, patch } from "../api.js";
import { errorBox, every, h, link, table } from "../dom.js";

export async function render(page) {
  const agents = h("div", { id: "agents" });
  const pools = h("div", { id: "pools" });
  const jobs = h("div", { id: "jobs" });
  const message = h("div", { class: "error", id: "job-error" });
  page.append(h("h1", {}, "Cluster"), h("h2", {}, "Resource pools"), pools, h("h2", {}, "Agents"), agents,
              h("h2", {}, "Job queue"), message, jobs);
  let editing = false;  // a half-typed priority is not redrawn away

  const allocationLink = (a) => (/^\d+\.\d+$/.test(a) ? link(`/trials/${a.split(".")[0]}`, `trial ${a}`) : a ? link("/tasks", a) : "free");

  // An elastic pool: its instances and what its provisioner last decided, and why.
  const provider = (p) => {
    if (!p) return "-";
    const instances = (p.instances || []).map((i) => `${i.id} ${i.state}${i.agent_connected ? (i.agent_idle ? " (idle)" : " (busy)") : ""}`);
    return h("div", {},
      h("div", {}, `${p.provider}: ${(p.instances || []).length} of ${p.min_instances || 0}-${p.max_instances || 0} instances`),
      ...instances.map((line) => h("div", { class: "muted" }, line)),
      p.last_decision ? h("div", { class: "muted" }, p.last_decision.reason) : "",
      p.last_error ? h("div", { class: "error" }, p.last_error) : "");
  };

  async function load() {
    try {
      const [a, p, j] = await Promise.all([get("/api/v1/agents"), get("/api/v1/resource-pools"), get("/api/v1/job-queues")]);
      pools.replaceChildren(table([
        { title: "Pool", cell: (x) => x.name }, { title: "Scheduler", cell: (x) => x.scheduler },
        { title: "Agents", cell: (x) => x.agents || 0 }, { title: "Slots", cell: (x) => x.slots_total || 0 },
        { title: "Used", cell: (x) => (x.slots_total || 0) - (x.slots_free || 0) }, { title: "Free", cell: (x) => x.slots_free || 0 },
        { title: "Running", cell: (x) => x.tasks_running || 0 }, { title: "Queued", cell: (x) => x.tasks_queued || 0 },
        { title: "Provider", cell: (x) => provider(x.provisioner) },
      ], p.resource_pools || [], { rowAttrs: (x) => ({ "data-pool": x.name }) }));
      agents.replaceChildren(table([
        { title: "Agent", cell: (x) => x.id }, { title: "Pool", cell: (x) => x.resource_pool },
        { title: "Connected", cell: (x) => (x.connected ? "yes" : "no") }, { title: "Enabled", cell: (x) => (x.enabled ? "yes" : "no") },
        { title: "Slots", cell: (x) => (x.slots || []).map((s) => h("div", {}, `${s.id} ${s.device}: `, allocationLink(s.allocation_id))) },
      ], a.agents || [], { rowAttrs: (x) => ({ "data-agent": x.id }) }));
      if (!editing) jobs.replaceChildren(jobTable(j.jobs || []));
    } catch (e) {
      pools.replaceChildren(errorBox(e));
    }
  }

  function jobTable(list) {
    const edit = (job, field) => {
      const input = h("input", { size: 4, value: job[field] ?? "", class: `job-${field}`,
        onfocus: () => { editing = true; }, onblur: () => { editing = false; },
        onchange: async () => {
          message.textContent = "";
          try {
            await patch(`/api/v1/experiments/${job.experiment_id}`, { resources: { [field]: Number(input.value) } });
          } catch (e) { message.textContent = e.message; }
          editing = false;
          load();
        } });
      return job.experiment_id && job.experiment_id !== "0" ? input : job[field] ?? "";
    };
    return table([
      { title: "#", cell: (x) => x.position }, { title: "Pool", cell: (x) => x.resource_pool },
      { title: "Job", cell: (x) => (x.experiment_id && x.experiment_id !== "0" ? link(`/experiments/${x.experiment_id}`, `experiment ${x.experiment_id}`) : `task ${x.task_id}`) },
      { title: "State", cell: (x) => x.state }, { title: "Priority", cell: (x) => edit(x, "priority") },
      { title: "Weight", cell: (x) => edit(x, "weight") }, { title: "Slots", cell: (x) => x.allocated_slots || 0 },
    ], list, { rowAttrs: (x) => ({ "data-job": x.experiment_id || x.task_id }) });
  }

  await load();
  return every(2000, load);
}
