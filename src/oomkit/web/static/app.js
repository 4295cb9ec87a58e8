// oomkit serve: the page. No build step, no dependencies: it reads the CLI's JSON from the
// API (/api/estimate, /api/plan, /api/doctor, /api/models, /api/gpus) and draws it.
"use strict";

(function () {
  const GiB = 1024 ** 3;
  const MiB = 1024 ** 2;
  const CTX = [2048, 4096, 8192, 16384, 32768, 65536, 131072, 262144, 524288];
  const QUANTS = {
    gguf: ["Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "Q4_K_S", "IQ4_XS", "Q3_K_M", "Q2_K"],
    vllm: ["bf16", "fp8", "awq", "gptq", "int8"],
    transformers: ["bf16", "int8", "nf4", "fp8", "awq", "gptq"],
  };
  // llama.cpp and the apps built on it (LM Studio, koboldcpp, the llama-cpp-python binding:
  // `-r lmstudio` in the CLI): GGUF quants, and the -ctk/-ctv KV cache types
  const LLAMA_FAMILY = ["llama.cpp", "lmstudio", "koboldcpp", "llama-cpp-python"];
  const $ = (id) => document.getElementById(id);

  // -- formatting: the same rule as oomkit.units.format_bytes (binary, 2 decimals) --------
  function fmtBytes(n) {
    const sign = n < 0 ? "-" : "";
    const a = Math.abs(n);
    return a >= GiB ? `${sign}${(a / GiB).toFixed(2)} GiB` : `${sign}${(a / MiB).toFixed(2)} MiB`;
  }
  function fmtCtx(n) {
    return n >= 1024 && n % 1024 === 0 ? `${n / 1024}k` : String(n);
  }
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") e.className = v;
      else if (k === "text") e.textContent = v;
      else if (k.startsWith("data-") || k.startsWith("aria-") || k === "role" || k === "title")
        e.setAttribute(k, v);
      else e[k] = v;
    }
    for (const kid of kids.flat()) {
      if (kid === null || kid === undefined) continue;
      e.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
    }
    return e;
  }
  function debounce(fn, ms) {
    let t = null;
    return (...args) => {
      clearTimeout(t);
      t = setTimeout(() => fn(...args), ms);
    };
  }

  // -- API ----------------------------------------------------------------------------------
  async function api(path, opts) {
    const r = await fetch(path, opts);
    let doc = null;
    try {
      doc = await r.json();
    } catch (e) {
      throw new Error(`${path}: HTTP ${r.status} (no JSON)`);
    }
    const warned = r.headers.get("x-oomkit-warnings");
    if (warned && doc && typeof doc === "object") {
      try {
        Object.defineProperty(doc, "__warnings", { value: JSON.parse(warned), enumerable: false });
      } catch (e) {
        /* a malformed header is not worth failing the answer */
      }
    }
    if (!r.ok) {
      const err = new Error(doc && typeof doc.detail === "string" ? doc.detail : `HTTP ${r.status}`);
      err.status = r.status;
      throw err;
    }
    return doc;
  }
  const postJSON = (path, body, signal) =>
    api(path, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      signal,
    });

  // -- copy to clipboard --------------------------------------------------------------------
  function copyButton(text, label) {
    const b = el("button", { type: "button", class: "copy", "aria-label": label || "Copy command" }, "Copy");
    b.addEventListener("click", async () => {
      try {
        if (navigator.clipboard && window.isSecureContext) {
          await navigator.clipboard.writeText(text);
        } else {
          // plain http on a LAN address (--allow-remote): no async clipboard API there
          const ta = el("textarea", { value: text, "aria-hidden": "true" });
          ta.style.position = "fixed";
          ta.style.opacity = "0";
          document.body.append(ta);
          ta.select();
          const ok = document.execCommand("copy");
          ta.remove();
          if (!ok) throw new Error("copy refused");
        }
        b.textContent = "Copied";
      } catch (e) {
        b.textContent = "Copy failed";
      }
      setTimeout(() => (b.textContent = "Copy"), 1500);
    });
    return b;
  }
  function commandBlock(cmd, label) {
    return el("div", { class: "cmd" }, el("pre", {}, el("code", {}, cmd)), copyButton(cmd, label));
  }

  // -- tabs (WAI-ARIA tabs pattern: arrows, Home/End move between tabs) ----------------------
  function setupTabs() {
    const tabs = Array.from(document.querySelectorAll('[role="tab"]'));
    function select(tab, focus) {
      for (const t of tabs) {
        const on = t === tab;
        t.setAttribute("aria-selected", String(on));
        t.tabIndex = on ? 0 : -1;
        $(t.getAttribute("aria-controls")).hidden = !on;
      }
      if (focus) tab.focus();
    }
    tabs.forEach((tab, i) => {
      tab.addEventListener("click", () => select(tab, false));
      tab.addEventListener("keydown", (ev) => {
        let j = null;
        if (ev.key === "ArrowRight") j = (i + 1) % tabs.length;
        else if (ev.key === "ArrowLeft") j = (i - 1 + tabs.length) % tabs.length;
        else if (ev.key === "Home") j = 0;
        else if (ev.key === "End") j = tabs.length - 1;
        if (j !== null) {
          ev.preventDefault();
          select(tabs[j], true);
        }
      });
    });
  }

  // -- controls -----------------------------------------------------------------------------
  let liveGpus = [];
  function fillQuants() {
    const rt = $("runtime").value;
    const list = LLAMA_FAMILY.includes(rt) || rt === "ollama" ? QUANTS.gguf : rt === "transformers" ? QUANTS.transformers : QUANTS.vllm;
    const prev = $("quant").value;
    $("quant").replaceChildren(
      el("option", { value: "" }, "model default"),
      ...list.map((q) => el("option", { value: q }, q))
    );
    if (list.includes(prev)) $("quant").value = prev;
    for (const f of document.querySelectorAll(".kv-field")) f.hidden = !LLAMA_FAMILY.includes(rt);
  }
  // the slider's stops: CTX up to the model's longest context (and that length itself, e.g.
  // GPT-2's 1024-row position table or Qwen3's 40960), from /api/context
  let stops = CTX.slice();
  let wantedCtx = null; // a context asked for (the URL) before the model's bound is known
  const maxCtxOf = new Map();
  function ctxValue() {
    return stops[Number($("ctx").value)];
  }
  function setStops(maxCtx) {
    const cur = wantedCtx || ctxValue();
    const next = CTX.filter((n) => !maxCtx || n <= maxCtx);
    if (maxCtx && (!next.length || next[next.length - 1] < maxCtx)) next.push(maxCtx);
    const changed = next.join() !== stops.join();
    stops = next;
    $("ctx").max = String(stops.length - 1);
    // the asked context, else the longest stop below it, else the shortest
    const below = stops.filter((n) => n <= cur).length - 1;
    $("ctx").value = String(Math.max(0, stops.includes(cur) ? stops.indexOf(cur) : below));
    wantedCtx = null;
    showCtx();
    return changed;
  }
  // the model's longest context (null: not a catalog name, any stop goes)
  async function boundCtx() {
    const m = $("model").value.trim();
    if (!m) return false;
    if (!maxCtxOf.has(m)) {
      try {
        maxCtxOf.set(m, (await api(`/api/context?model=${encodeURIComponent(m)}`)).max_context);
      } catch (e) {
        maxCtxOf.set(m, null);
      }
    }
    return setStops(maxCtxOf.get(m));
  }
  function showCtx() {
    const n = ctxValue();
    $("ctx-out").textContent = fmtCtx(n);
    $("ctx").setAttribute("aria-valuetext", `${n} tokens (${fmtCtx(n)})`);
  }
  async function loadGpus(wanted) {
    const doc = await api("/api/gpus");
    liveGpus = doc.live || [];
    const groups = [];
    if (liveGpus.length) {
      // "auto" is `oomkit estimate --gpu auto`: every GPU here, each with its free memory now
      const names = [...new Set(liveGpus.map((g) => g.name))].join(" + ");
      const free = liveGpus.reduce((a, g) => a + g.memory_free_bytes, 0);
      groups.push(
        el("optgroup", { label: "My GPUs" },
          el("option", { value: "auto" }, `All ${liveGpus.length}: ${names} (${fmtBytes(free)} free now)`),
          liveGpus.map((g) => el("option", { value: `live:${g.index}` },
            `GPU ${g.index}: ${g.name} (${fmtBytes(g.memory_free_bytes)} free of ${fmtBytes(g.memory_total_bytes)})`)))
      );
    }
    groups.push(
      el("optgroup", { label: "Catalog" },
        doc.gpus.map((g) => el("option", { value: g.key },
          gpuLabel(g, (doc.capacity_bytes_by_os || {})[g.key]))))
    );
    catalogGpus = doc;
    $("gpu").replaceChildren(...groups);
    $("doctor-gpu-list").replaceChildren(...doc.gpus.map((g) => el("option", { value: g.key }, g.name)));
    const keys = doc.gpus.map((g) => g.key);
    const offered = [...$("gpu").options].map((o) => o.value);
    const fallback = liveGpus.length ? "auto" : keys.includes("rtx-4090") ? "rtx-4090" : keys[0];
    $("gpu").value = wanted && offered.includes(wanted) ? wanted : fallback;
    if (wanted && !offered.includes(wanted)) await linkGpu(wanted, offered);
    countForGpu();
  }
  // a link's gpu= that is not a key of the list: what `--gpu` takes (an alias such as h100,
  // a count such as 2x4090), resolved by the server as the CLI resolves it; else an error
  // under the box naming the parameter, never a silent fallback to the default card
  async function linkGpu(wanted, offered) {
    try {
      const keys = (await api(`/api/gpu-name?name=${encodeURIComponent(wanted)}`)).gpus;
      const counts = [...$("gpu-count").options].map((o) => Number(o.value));
      if (keys.length && keys.every((k) => k === keys[0]) && offered.includes(keys[0])) {
        if (keys.length === 1 || counts.includes(keys.length)) {
          $("gpu").value = keys[0];
          if (keys.length > 1) $("gpu-count").value = String(keys.length);
          return;
        }
        return linkError("gpu", `This link's gpu=${wanted}: ${keys.length} GPUs; the page offers ${counts.join(", ")} of one kind.`);
      }
      linkError("gpu", `This link's gpu=${wanted} names different GPUs (${keys.join(", ")}); the page takes one kind: use oomkit estimate --gpu ${wanted}.`);
    } catch (err) {
      linkError("gpu", `This link's gpu=${wanted}: ${err.message}`);
    }
  }
  // an error under a box about the value a link asked for; the box shows the default until
  // the user picks one (which clears it)
  function linkError(id, message) {
    const box = $(id);
    let note = $(`${id}-link-error`);
    if (!note) {
      note = el("small", { id: `${id}-link-error`, class: "field-error", role: "alert" });
      box.parentElement.append(note);
      box.setAttribute("aria-describedby", `${box.getAttribute("aria-describedby") || ""} ${id}-link-error`.trim());
      const clear = () => {
        note.hidden = true;
        box.removeAttribute("aria-invalid");
      };
      box.addEventListener("change", clear);
      if (id === "gpu") $("gpu-count").addEventListener("change", clear);
    }
    note.textContent = `${message} Showing ${box.options ? box.options[box.selectedIndex]?.text || "the default" : "the default"} instead.`;
    note.hidden = false;
    box.setAttribute("aria-invalid", "true");
  }
  // a catalog GPU's label shows the capacity the estimate budgets against on the chosen OS
  // (the CUDA total on Linux: 23.52 GiB for an RTX 4090), with the card's nominal memory
  let catalogGpus = null;
  function gpuLabel(g, caps) {
    const name = g.name.replace(/^NVIDIA (GeForce )?/, "");
    const cap = caps ? caps[$("os").value] ?? caps[""] : g.memory_bytes;
    return cap === g.memory_bytes ? `${name} (${fmtBytes(cap)})`
      : `${name} (${fmtBytes(cap)} usable of ${fmtBytes(g.memory_bytes)})`;
  }
  function relabelGpus() {
    if (!catalogGpus) return;
    const caps = catalogGpus.capacity_bytes_by_os || {};
    for (const g of catalogGpus.gpus) {
      const o = $("gpu").querySelector(`option[value="${CSS.escape(g.key)}"]`);
      if (o) o.textContent = gpuLabel(g, caps[g.key]);
    }
  }
  // this machine's GPUs come as they are: the count is theirs, not a choice
  function countForGpu() {
    const v = $("gpu").value;
    const live = v === "auto" || v.startsWith("live:");
    $("gpu-count").disabled = live;
    if (live) $("gpu-count").value = "1";
  }
  const suggestModels = debounce(async () => {
    const q = $("model").value.trim();
    try {
      const doc = await api(`/api/models?limit=15&q=${encodeURIComponent(q)}`);
      $("model-list").replaceChildren(
        ...doc.models.map((m) => el("option", { value: m.key }, `${m.name}${m.hf_repo ? " — " + m.hf_repo : ""}`))
      );
      if (knownModel() && $("model").value.trim() !== lastModel) scheduleUpdate();
    } catch (e) {
      /* autocomplete is best-effort */
    }
  }, 150);

  // while a name is being typed, only a complete catalog name (or Enter / leaving the box)
  // asks the server: "llama-3.1-" is not an error worth showing
  let lastModel = null;
  function knownModel() {
    const v = $("model").value.trim();
    return [...$("model-list").options].some((o) => o.value === v);
  }
  function hardwareBody() {
    const v = $("gpu").value;
    // all of this machine's GPUs: the server reads them as `--gpu auto` does (count, free memory)
    if (v === "auto") return { gpu: "auto", n: liveGpus.length };
    if (v.startsWith("live:")) {
      // one of them: its free memory now, as `--gpu auto` budgets it (gpu_choice.live_targets);
      // a card the catalog knows is named too (architecture, bandwidth)
      const g = liveGpus.find((x) => `live:${x.index}` === v);
      return { gpu: g.catalog_key || undefined, vram: g.memory_free_bytes, n: 1 };
    }
    const n = Number($("gpu-count").value);
    return { gpu: n > 1 ? `${n}x${v}` : v, n };
  }
  function requestBodies() {
    const hw = hardwareBody();
    // --os and --ram: both commands take them; the server checks them as the CLI does
    const common = {
      model: $("model").value.trim(), runtime: $("runtime").value, ctx: ctxValue(),
      os: $("os").value || undefined, ram: ramSent || undefined,
    };
    const quant = $("quant").value || undefined;
    const est = { ...common, quant, gpu: hw.gpu, vram: hw.vram };
    if (LLAMA_FAMILY.includes(common.runtime)) {
      // -ctk/-ctv: `oomkit estimate` takes them; `oomkit plan` picks the KV type itself
      est.cache_type_k = $("ctk").value || undefined;
      est.cache_type_v = $("ctv").value || undefined;
      // -fa on|off (llama-server's values); "default" sends nothing: the runtime's own default
      if ($("fa").value) est.flash_attn = $("fa").value === "on";
    }
    // vLLM/SGLang use several GPUs through tensor parallelism; llama.cpp splits layers itself
    if (hw.n > 1 && ["vllm", "sglang"].includes(common.runtime)) est.tp = hw.n;
    const plan = { ...common, quant, gpu: hw.gpu, vram: hw.vram };
    if ($("compare").checked) plan.runtime = "any";
    for (const b of [est, plan]) for (const k of Object.keys(b)) if (b[k] === undefined) delete b[k];
    return { est, plan };
  }
  function saveState() {
    const p = new URLSearchParams({
      model: $("model").value.trim(), gpu: $("gpu").value, n: $("gpu-count").value,
      runtime: $("runtime").value, quant: $("quant").value, ctx: String(ctxValue()),
    });
    for (const id of ["os", "ctk", "ctv", "fa"]) if ($(id).value.trim()) p.set(id, $(id).value.trim());
    if (ramSent) p.set("ram", ramSent);
    if ($("compare").checked) p.set("compare", "1");
    history.replaceState(null, "", `#${p}`);
  }
  function readState() {
    const p = new URLSearchParams(location.hash.slice(1));
    if (p.get("model")) $("model").value = p.get("model");
    // a value the select does not offer (an old or edited link: runtime=bogus) would blank it
    // and send runtime "" ("String should have at least 1 character"): keep the default
    // (an error under the box names the parameter: the link was not read as written)
    const pick = (id, v, param) => {
      if (!v) return;
      const o = [...$(id).options].find((x) => x.value === v || x.value.toLowerCase() === v.toLowerCase());
      if (o) $(id).value = o.value;
      else linkErrors.push([id, `This link's ${param}=${v} is not one of this box's choices.`]);
    };
    pick("runtime", p.get("runtime"), "runtime");
    pick("gpu-count", p.get("n"), "n");
    pick("os", p.get("os"), "os");
    pick("ctk", p.get("ctk"), "ctk");
    pick("ctv", p.get("ctv"), "ctv");
    pick("fa", p.get("fa"), "fa");
    if (p.get("ram")) $("ram").value = ramSent = p.get("ram").trim();
    $("compare").checked = p.get("compare") === "1";
    const ctx = Number(p.get("ctx"));
    if (CTX.includes(ctx)) $("ctx").value = String(CTX.indexOf(ctx));
    if (Number.isInteger(ctx) && ctx > 0) wantedCtx = ctx; // bounded by the model's own below
    return { gpu: p.get("gpu"), quant: p.get("quant") };
  }
  const linkErrors = []; // [box id, message] from readState, shown once the boxes are filled

  // -- results: bars, verdict, suggestions, plan table --------------------------------------
  const SEGMENTS = [
    ["weights", "weights", (d) => d.weights_bytes],
    ["kv", "KV cache", (d) => d.kv_cache_bytes],
    ["compute", "compute", (d) => d.activations_bytes],
    ["overhead", "overhead", (d) => d.overhead_bytes],
    ["train", "gradients/optimizer", (d) => (d.gradients_bytes || 0) + (d.optimizer_bytes || 0)],
  ];
  // what the verdict keeps out of a device beyond the estimate (Windows' WDDM reservation): the
  // free memory `oomkit estimate` prints is verdict_details.margins[].free_bytes, net of these
  function reservedOn(doc, device) {
    const m = ((doc.verdict_details || {}).margins || []).find((x) => x.device === device && x.what === "device memory");
    return m ? (m.reservations || []).reduce((a, r) => a + r.bytes, 0) : 0;
  }
  function deviceBar(d, headroom, reserved = 0) {
    const cap = d.capacity_bytes;
    const scale = Math.max(cap || 0, d.total_bytes) || 1;
    const pct = (n) => `${((100 * n) / scale).toFixed(3)}%`;
    const bar = el("div", { class: "bar", role: "img",
      "aria-label": `${d.device}: ${fmtBytes(d.total_bytes)}${cap ? " of " + fmtBytes(cap) : ""}` });
    for (const [cls, label, get] of SEGMENTS) {
      const n = get(d);
      if (!n) continue;
      bar.append(el("span", { class: `seg ${cls}`, title: `${label} ${fmtBytes(n)}`, "data-bytes": String(n) }));
      bar.lastChild.style.width = pct(n);
    }
    if (cap) {
      const capLine = el("span", { class: "cap", title: `capacity ${fmtBytes(cap)}` });
      capLine.style.left = pct(cap);
      bar.append(capLine);
      if (headroom && headroom < cap) {
        const hr = el("span", { class: "headroom", title: `keep ${fmtBytes(headroom)} free` });
        hr.style.left = pct(cap - headroom);
        bar.append(hr);
      }
    }
    const free = cap ? cap - d.total_bytes - reserved : null;
    const head = el("div", { class: "bar-head" },
      el("strong", {}, d.device),
      el("span", { class: "total", "data-total-bytes": String(d.total_bytes) },
        `${fmtBytes(d.total_bytes)}${cap ? " of " + fmtBytes(cap) : ""}`),
      free === null ? null : el("span", { class: free >= 0 ? "free ok" : "free bad" },
        free >= 0 ? `${fmtBytes(free)} free` : `${fmtBytes(-free)} over`));
    const parts = el("ul", { class: "parts" },
      SEGMENTS.filter(([, , get]) => get(d)).map(([cls, label, get]) =>
        el("li", { "data-part": cls, "data-bytes": String(get(d)) }, el("span", { class: `sw ${cls}` }), `${label} ${fmtBytes(get(d))}`)));
    return el("div", { class: "device", "data-device": d.device, "data-capacity-bytes": cap ? String(cap) : null }, head, bar, parts);
  }
  function verdictText(doc) {
    const m = doc.model.name;
    const assumed = (doc.assumptions || []).map((a) => /^no quant given: assumed (\S+)/.exec(a)).find(Boolean);
    const q = doc.settings.quant ? `at ${doc.settings.quant}` : assumed ? `at ${assumed[1]} (default)` : "at the default quant";
    const ctx = doc.settings.ctx || doc.runtime_details.n_ctx;
    const what = `${m} ${q}${ctx ? ` with ${Number(ctx).toLocaleString("en-US")} tokens of context` : ""} on ${doc.runtime}`;
    const devs = doc.devices.filter((d) => d.capacity_bytes);
    if (doc.fits === null || doc.fits === undefined || !devs.length) {
      return [null, `${what} needs ${fmtBytes(doc.total_bytes)} in all; pick a GPU to compare.`];
    }
    const short = (d) => d.total_bytes + reservedOn(doc, d.device) - d.capacity_bytes;
    const worst = devs.reduce((a, b) => (short(b) > short(a) ? b : a));
    const room = -short(worst);
    const kept = reservedOn(doc, worst.device);
    const after = kept ? ` after ${fmtBytes(kept)} the OS reserves` : "";
    const where = devs.length > 1 ? ` (fullest: ${worst.device})` : "";
    if (doc.fits) {
      const tight = doc.verdict === "tight" ? "Tight: it fits, but close to the limit — " : "Yes — ";
      // llama.cpp's --fit, Ollama's scheduler or llama-cpp-python's n_gpu_layers=0 put layers
      // on the CPU (runtime_details.offloaded_layers, "43/81"): `estimate` says "43 of 81
      // layers"; "Yes" alone read as the whole model on the GPU
      const split = /^(\d+)\/(\d+)$/.exec(String((doc.runtime_details || {}).offloaded_layers || ""));
      const cpu = split && Number(split[1]) < Number(split[2])
        ? ` ${Number(split[1]) ? `Only ${split[1]} of ${split[2]} layers are on the GPU; the rest run` : `None of the ${split[2]} layers is on the GPU; they run`} on the CPU${doc.host && doc.host.total_bytes ? ` (${fmtBytes(doc.host.total_bytes)} of host RAM)` : ""}, far slower.`
        : "";
      return [doc.verdict === "tight" ? "tight" : "fits",
        `${tight}${what} needs ${fmtBytes(worst.total_bytes)} of ${fmtBytes(worst.capacity_bytes)}${where}, leaving ${fmtBytes(room)} free${after}.${cpu}`];
    }
    const why = doc.blockers && doc.blockers.length ? ` ${doc.blockers[0]}` : "";
    return ["nofit", `No — ${what} needs ${fmtBytes(worst.total_bytes)} but ${worst.device} has ${fmtBytes(worst.capacity_bytes)} (short by ${fmtBytes(-room)}${after}).${why}`];
  }
  // the legend lists the parts some bar shows (no "gradients/optimizer" for inference), and
  // the headroom mark where a bar draws it
  function showLegend(doc, headroom) {
    const shown = new Set(SEGMENTS.filter(([, , get]) => doc.devices.some((d) => get(d))).map(([cls]) => cls));
    if (headroom && doc.devices.some((d) => d.capacity_bytes && headroom < d.capacity_bytes)) shown.add("headroom");
    for (const item of document.querySelectorAll("#legend [data-part]")) item.hidden = !shown.has(item.dataset.part);
  }
  function renderEstimate(doc, headroom) {
    showLegend(doc, headroom);
    const [cls, text] = verdictText(doc);
    $("verdict").textContent = text;
    $("verdict").className = `verdict ${cls || ""}`;
    $("verdict").dataset.fits = String(doc.fits);
    const nodes = doc.devices.map((d) => deviceBar(d, headroom, reservedOn(doc, d.device)));
    if (doc.host && doc.host.total_bytes) {
      nodes.push(el("p", { class: "host", "data-total-bytes": String(doc.host.total_bytes) },
        `Host RAM: ${fmtBytes(doc.host.total_bytes)}${doc.host.capacity_bytes ? " of " + fmtBytes(doc.host.capacity_bytes) : ""}`));
    }
    $("bars").replaceChildren(...nodes);
    const sugg = doc.suggestions || [];
    $("suggestions").replaceChildren(
      ...(doc.fits === false
        ? [el("h2", {}, sugg.length ? "To make it fit" : "Nothing the planner can change makes it fit"),
          el("ol", { class: "suggest" }, sugg.map((s) =>
            el("li", {}, el("span", {}, `${s.changes.join(", ") || "as asked"}`),
              el("span", { class: "saving" }, ` saves ~${fmtBytes(s.saving_bytes)} on the fullest GPU`),
              commandBlock(s.command, `Copy command: ${s.changes.join(", ")}`))))]
        : [])
    );
    $("assumptions").replaceChildren(...(doc.assumptions || []).map((a) => el("li", {}, a)));
  }
  function renderPlan(doc) {
    $("plan").hidden = false;
    const anySpeed = doc.plans.some((p) => p.speed && p.speed.decode_tokens_per_s);
    document.querySelectorAll(".speed-col").forEach((c) => (c.hidden = !anySpeed));
    $("plan-note").textContent = doc.plans.length
      ? `${doc.plans.length} configuration(s) fit, best first (prefer ${doc.request.prefer}; each keeps ${fmtBytes(doc.request.headroom_bytes)} free per GPU).`
      : "Nothing fits.";
    const rows = doc.plans.map((p, i) => {
      const peak = Math.max(...p.devices.map((d) => d.total_bytes));
      const withCap = p.devices.filter((d) => d.capacity_bytes);
      const free = withCap.length ? Math.min(...withCap.map((d) => d.capacity_bytes - d.total_bytes)) : null;
      const sp = p.speed && p.speed.decode_tokens_per_s;
      const speed = el("td", { class: "speed-col", "data-label": "Speed", title: p.speed ? p.speed.basis || "" : "" },
        sp ? `~${Math.round(sp)} tok/s` : "—");
      speed.hidden = !anySpeed;
      return el("tr", { "data-plan": String(i) },
        el("th", { scope: "row" }, i === 0 ? "Plan" : `Alt ${i}`),
        el("td", { "data-label": "Runtime" }, p.launcher || p.runtime),
        el("td", { "data-label": "What changes" }, p.changes.length ? p.changes.join(", ") : "as asked"),
        el("td", { "data-label": "Peak GPU", "data-bytes": String(peak) }, fmtBytes(peak)),
        el("td", { "data-label": "Free", "data-bytes": free === null ? null : String(free),
          title: `${fmtBytes(p.margin_bytes)} beyond the ${fmtBytes(doc.request.headroom_bytes)} kept free` },
          free === null ? "—" : fmtBytes(free)),
        speed,
        el("td", { class: "cmd-cell", "data-label": "Command" }, commandBlock([...(p.prepare || []), p.command].join("\n"), `Copy command for ${i === 0 ? "the plan" : "alternative " + i}`)));
    });
    $("plan-table").tBodies[0].replaceChildren(...rows);
    $("plan-table").hidden = !rows.length;
    const rej = doc.rejected || [];
    $("rejected").replaceChildren(
      ...(rej.length ? [el("h3", {}, "Does not fit"), el("ul", { class: "rejected" },
        rej.map((r) => el("li", {}, el("strong", {}, `[${r.launcher || r.runtime}] ${r.description}: `), r.reason)))] : []),
      ...(doc.impossible ? [el("p", { class: "impossible" }, doc.impossible)] : [])
    );
  }

  // an error about a value typed into a box (the API's detail names it as the CLI does:
  // "Invalid value for 'ram': ...", "Unknown model '...'") is also shown under that box, which
  // is marked invalid (aria-invalid; its aria-describedby reads the message)
  const TYPED = ["model", "ram"];
  function fieldOf(message) {
    const m = /^Invalid value for '([a-z_]+)'/.exec(message);
    if (m) return TYPED.includes(m[1]) ? m[1] : null;
    return /^Unknown model\b/.test(message) ? "model" : null;
  }
  function showFieldError(message) {
    const at = fieldOf(message);
    for (const id of TYPED) {
      const on = id === at;
      if (on) $(id).setAttribute("aria-invalid", "true");
      else $(id).removeAttribute("aria-invalid");
      $(`${id}-error`).textContent = on ? message : "";
      $(`${id}-error`).hidden = !on;
    }
  }

  let inflight = null;
  let seq = 0;
  let hasResult = false; // the page shows an answer (kept while a typed value is bad)
  async function update() {
    await boundCtx();
    saveState();
    const { est, plan } = requestBodies();
    if (!est.model) return;
    lastModel = est.model;
    if (inflight) inflight.abort();
    inflight = new AbortController();
    const mine = ++seq;
    document.body.classList.add("busy");
    try {
      const [e, p] = await Promise.all([
        postJSON("/api/estimate", est, inflight.signal),
        postJSON("/api/plan", plan, inflight.signal).catch((err) => ({ error: err })),
      ]);
      if (mine !== seq) return;
      $("fit-error").hidden = true;
      showFieldError("");
      $("stale-note").hidden = true;
      delete document.body.dataset.stale;
      hasResult = true;
      // as `oomkit plan` draws it: vLLM/SGLang size their pools to a fraction of the GPU instead
      const headroom = p.error || !["llama.cpp", "ollama"].includes(e.runtime) ? null : p.request.headroom_bytes;
      renderEstimate(e, headroom);
      const warned = [...(e.__warnings || []), ...((!p.error && p.__warnings) || [])];
      $("warnings").replaceChildren(...[...new Set(warned)].map((w) => el("li", {}, w)));
      if (p.error) {
        $("plan").hidden = false;
        $("plan-note").textContent = `No plan: ${p.error.message}`;
        $("plan-table").tBodies[0].replaceChildren();
        $("rejected").replaceChildren();
      } else renderPlan(p);
      document.body.dataset.state = "ready";
      document.body.dataset.renders = String(Number(document.body.dataset.renders || 0) + 1);
    } catch (err) {
      if (err.name === "AbortError" || mine !== seq) return;
      $("fit-error").textContent = err.message;
      $("fit-error").hidden = false;
      showFieldError(err.message);
      document.body.dataset.renders = String(Number(document.body.dataset.renders || 0) + 1);
      if (fieldOf(err.message) === "ram" && hasResult) {
        // Host RAM "64" (no unit yet): the last good result stays, dimmed, until the box is
        // fixed; the error is under the box. (A model name is sent only when it is a catalog
        // name or on Enter: another model's numbers would not be this one's, so they go.)
        $("stale-note").hidden = false;
        document.body.dataset.stale = "1";
        document.body.dataset.state = "error";
        return;
      }
      $("stale-note").hidden = true;
      delete document.body.dataset.stale;
      hasResult = false;
      $("verdict").textContent = "";
      $("verdict").className = "verdict";
      $("bars").replaceChildren();
      $("warnings").replaceChildren();
      $("suggestions").replaceChildren();
      $("plan").hidden = true;
      document.body.dataset.state = "error";
    } finally {
      if (mine === seq) document.body.classList.remove("busy");
    }
  }
  const scheduleUpdate = debounce(update, 250);
  // a size as oomkit.units.parse_size reads one, unit included (or nothing: no --ram)
  // the Host RAM the requests carry: the box's value once complete (or committed), so an
  // update the other boxes ask for while "64Gi" is being typed sends the last complete one
  let ramSent = "";
  const RAM_COMPLETE = /^\s*(\d+(\.\d+)?\s*([kmgt]i?b|[kmgt]|b)\s*)?$/i;

  // -- doctor -------------------------------------------------------------------------------
  // the answers to the deciding question for the log on the page (reset by "Diagnose")
  let doctorAnswers = {};
  async function diagnose(answers) {
    const text = $("log").value;
    $("doctor-error").hidden = true;
    if (!text.trim()) {
      $("diagnosis").replaceChildren();  // the last log's diagnosis is not this one's
      $("doctor-error").textContent = "Paste the error message or the log first.";
      $("doctor-error").hidden = false;
      return;
    }
    doctorAnswers = answers && typeof answers === "object" && !(answers instanceof Event) ? answers : {};
    // what the user knows, as `oomkit doctor -m MODEL --gpu GPU --when PHASE`
    const facts = {};
    for (const k of DOCTOR_FACTS) {
      const v = $(`doctor-${k}`).value.trim();
      if (v) facts[k] = v;
    }
    const body = { log: text, ...facts };
    if (Object.keys(doctorAnswers).length) body.answers = doctorAnswers;
    const opts = Object.keys(body).length > 1
      ? { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }
      : { method: "POST", headers: { "content-type": "text/plain" }, body: text };
    try {
      const d = await api("/api/doctor", opts);
      showDoctorFieldError("");
      renderDiagnosis(d);
      document.body.dataset.diagnoses = String(Number(document.body.dataset.diagnoses || 0) + 1);
    } catch (err) {
      $("diagnosis").replaceChildren();
      $("doctor-error").textContent = err.message;
      $("doctor-error").hidden = false;
      showDoctorFieldError(err.message);
      document.body.dataset.doctorErrors = String(Number(document.body.dataset.doctorErrors || 0) + 1);
    }
  }
  const DOCTOR_FACTS = ["model", "gpu", "when"];
  // the server's one-line error about one of them (the CLI's wording), under its box
  function doctorFieldOf(message) {
    if (/^Unknown model\b|^Invalid (request: |value for ')model\b/.test(message)) return "model";
    if (/^Unknown GPU\b|^GPU count\b|^no GPU named\b|^Invalid (request: |value for ')gpu\b/.test(message)) return "gpu";
    if (/^Invalid (request: |value for ')when\b|^answers: when=/.test(message)) return "when";
    return null;
  }
  function showDoctorFieldError(message) {
    const at = message ? doctorFieldOf(message) : null;
    for (const k of DOCTOR_FACTS) {
      const box = $(`doctor-${k}`);
      const on = k === at;
      if (on) box.setAttribute("aria-invalid", "true");
      else box.removeAttribute("aria-invalid");
      $(`doctor-${k}-error`).textContent = on ? message : "";
      $(`doctor-${k}-error`).hidden = !on;
    }
  }
  const suggestDoctorModels = debounce(async () => {
    const q = $("doctor-model").value.trim();
    if (!q) return;
    try {
      const doc = await api(`/api/models?limit=15&q=${encodeURIComponent(q)}`);
      $("doctor-model-list").replaceChildren(
        ...doc.models.map((m) => el("option", { value: m.key }, `${m.name}${m.hf_repo ? " — " + m.hf_repo : ""}`))
      );
    } catch (e) {
      /* autocomplete is best-effort */
    }
  }, 150);
  function renderDiagnosis(d) {
    const box = $("diagnosis");
    if (!d.events.length) {
      box.replaceChildren(el("p", { class: "verdict" }, "No out-of-memory message was found. Paste the full error (the line with 'out of memory' and the lines around it)."));
      return;
    }
    const ev = d.events.slice(0, 10).map((e) => {
      const nums = [];
      if (e.requested_bytes != null) nums.push(`requested ${fmtBytes(e.requested_bytes)}`);
      if (e.total_bytes != null) nums.push(`total ${fmtBytes(e.total_bytes)}`);
      if (e.free_bytes != null) nums.push(`free ${fmtBytes(e.free_bytes)}`);
      return el("li", {}, `line ${e.line}: ${e.runtime} ${e.format || e.kind}${e.device != null ? " device " + e.device : ""}${nums.length ? " (" + nums.join(", ") + ")" : ""}`);
    });
    box.replaceChildren(
      el("h2", {}, "Diagnosis"),
      el("p", { class: "cause", "data-cause": d.cause }, el("strong", {}, "Cause: "), d.cause,
        el("span", { class: "conf" }, ` (confidence ${Number(d.confidence).toFixed(2)})`)),
      el("p", { class: "explanation" }, d.explanation),
      ...answeredLine(d),
      ...questionBox(d),
      el("h3", {}, `Found ${d.events.length} OOM message(s)`),
      el("ul", { class: "events" }, ev),
      ...(d.fixes.length ? [el("h3", {}, "Fixes (those that make it fit first, least intrusive first; then by expected saving; unsized advice and hardware changes last)"),
        el("ol", { class: "fixes" }, d.fixes.map((f) => el("li", {},
          el("strong", {}, f.title),
          f.expected_saving_bytes != null ? el("span", { class: "saving", "data-bytes": String(f.expected_saving_bytes) }, ` saves ~${fmtBytes(f.expected_saving_bytes)}`) : null,
          f.generic ? el("span", { class: "generic" }, " (generic)") : null,
          el("p", {}, f.why),
          f.commands.length ? commandBlock(f.commands.join("\n"), `Copy commands: ${f.title}`) : null)))] : []),
      ...((d.notes || []).length ? [el("ul", { class: "notes" }, d.notes.map((n) => el("li", {}, n)))] : [])
    );
  }

  // the deciding question under the finding: one button per answer, each naming the cause the
  // doctor gives with it; a click re-posts the log with the answer (as --answer ID=VALUE)
  function questionBox(d) {
    const q = d.question;
    if (!q) return [];
    return [el("div", { class: "question", role: "group", "aria-labelledby": "question-text", "data-question": q.id },
      el("p", { id: "question-text" }, el("strong", {}, "One fact would decide it: "), q.text),
      el("div", { class: "answers" }, q.answers.map((a) => el("button", {
        type: "button", class: "answer", "data-value": a.value, title: `leads to ${a.leads_to}`,
        onclick: () => {
          if (q.id === "when") $("doctor-when").value = a.value;
          diagnose({ ...doctorAnswers, [q.id]: a.value });
        },
      }, a.text, el("span", { class: "leads" }, ` → ${a.leads_to}`)))))];
  }
  function answeredLine(d) {
    const given = d.answers || [];
    if (!given.length) return [];
    return [el("p", { class: "answered" }, "Re-run with your answer: ",
      given.map((a) => `${a.id}=${a.value} (${a.effect})`).join(", "))];
  }

  // -- start --------------------------------------------------------------------------------
  async function start() {
    setupTabs();
    const wanted = readState();
    fillQuants();
    if (wanted.quant) {
      const o = [...$("quant").options].find((x) => x.value.toLowerCase() === wanted.quant.toLowerCase());
      if (o) $("quant").value = o.value;
      else linkErrors.push(["quant", `This link's quant=${wanted.quant} is not one of this box's choices.`]);
    }
    showCtx();
    // the doctor tab needs no GPU list: its handlers are attached before the list loads (a
    // click on Diagnose in the first moment once did nothing)
    $("diagnose").addEventListener("click", () => diagnose());
    $("doctor-model").addEventListener("input", suggestDoctorModels);
    for (const k of DOCTOR_FACTS) {
      $(`doctor-${k}`).addEventListener("keydown", (ev) => {
        if (ev.key === "Enter") { ev.preventDefault(); diagnose(); }
      });
    }
    $("log").addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) { ev.preventDefault(); diagnose(); }
    });
    try {
      await loadGpus(wanted.gpu);
    } catch (err) {
      $("fit-error").textContent = `Could not list GPUs: ${err.message}`;
      $("fit-error").hidden = false;
    }
    for (const [id, message] of linkErrors) linkError(id, message);
    $("model").addEventListener("input", () => { suggestModels(); if (knownModel()) scheduleUpdate(); });
    $("model").addEventListener("change", () => { if ($("model").value.trim() !== lastModel) scheduleUpdate(); });
    $("model").addEventListener("keydown", (ev) => { if (ev.key === "Enter") { ev.preventDefault(); update(); } });
    $("runtime").addEventListener("change", () => { fillQuants(); scheduleUpdate(); });
    $("gpu").addEventListener("change", countForGpu);
    for (const id of ["gpu", "gpu-count", "quant", "compare", "os", "ctk", "ctv", "fa"]) $(id).addEventListener("change", scheduleUpdate);
    // Host RAM: while typed ("6", "64", "64Gi") a value is not yet what is meant; it is sent
    // once it reads as a size with a unit, or on Enter / leaving the box (then a bad one is
    // an error under the box, and the last result stays)
    $("ram").addEventListener("input", () => {
      if (RAM_COMPLETE.test($("ram").value)) { ramSent = $("ram").value.trim(); scheduleUpdate(); }
    });
    $("ram").addEventListener("change", () => { ramSent = $("ram").value.trim(); scheduleUpdate(); });
    $("ram").addEventListener("keydown", (ev) => {
      if (ev.key === "Enter") { ev.preventDefault(); ramSent = $("ram").value.trim(); update(); }
    });
    $("ctx").addEventListener("input", () => { showCtx(); scheduleUpdate(); });
    $("os").addEventListener("change", relabelGpus);
    suggestModels();
    update();
  }
  document.addEventListener("DOMContentLoaded", start);
})();
