/* graph.js — the graph page (/graph?session=&version=&run=&expand=&color=&highlight=): the server's SVG
 * (parsed with DOMParser and imported, never innerHTML), pan by dragging and zoom with the wheel through
 * the viewBox. The server draws the model top to bottom with the training machinery (gradients,
 * optimizer, initialisers) as one box each and repeated structures as series boxes, under a cap it
 * reports (shown above the drawing). Click a collapsed scope (g#scope:X) to open it (the view zooms to
 * it), a group or series box to dissolve it, an open cluster's label to close it (the expanded set lives
 * in the URL); click an op node for its details in a side panel. Labels appear as you zoom (level of
 * detail: text that would be smaller than LEGIBLE_PX on screen is hidden). Search outlines the node in
 * the drawing itself (no new layout; the server says which box holds a hidden node), a version picker,
 * colour by device or by time of a run, and the legend. The nodes of a fused group (docs/fusion.md)
 * come outlined from the server; the legend counts them and a node's panel names its group. A slower earlier answer never replaces a newer
 * drawing, highlight or node panel. Reloads when the session's graph or traced runs change. */
'use strict';
(() => {
  const {h, api, clear, option, params, setParams, append} = tide;
  const LEGIBLE_PX = 7;      /* text smaller than this on screen is hidden until you zoom in */
  const page = document.getElementById('page');
  const q = params();
  const state = {
    session: q.get('session') || '', version: q.get('version') || '', run: q.get('run') || '',
    color: q.get('color') === 'time' ? 'time' : 'device', highlight: q.get('highlight') || '',
    expand: new Set((q.get('expand') || '').split(',').filter(Boolean)), expandAll: q.get('expand_all') === '1',
    selected: q.get('node') || '',
  };
  let names = [];            /* node names of the shown version, for search */
  let colors = new Map();    /* node name -> the server's device colour */
  let namesOf = null;        /* the session/version/run they are of */
  let view = null;           /* {x, y, w, h} the current viewBox */
  let base = null;           /* the SVG's own viewBox */
  let svgEl = null;
  const drawingGuard = tide.latest(), highlightGuard = tide.latest(), panelGuard = tide.latest();

  const sessionSel = h('select', {id: 'g-session', onchange: () => { state.session = sessionSel.value; state.version = ''; state.run = '';
    state.expand.clear(); refreshPickers().then(() => loadSvg()); }});
  const versionSel = h('select', {id: 'g-version', onchange: () => { state.version = versionSel.value; loadSvg(); }});
  const colorSel = h('select', {id: 'g-color', onchange: () => { state.color = colorSel.value; loadSvg({keepView: true}); }},
    option('device', 'device'), option('time', 'time'));
  colorSel.value = state.color;
  const runSel = h('select', {id: 'g-run', onchange: () => { state.run = runSel.value; loadSvg({keepView: true}); if (state.selected) showNode(state.selected); }});
  const search = h('input', {id: 'g-search', type: 'search', placeholder: 'search a node or scope…', list: 'g-names', size: '28',
    onkeydown: (e) => { if (e.key === 'Enter') doSearch(search.value.trim()); }});
  const datalist = h('datalist', {id: 'g-names'});
  const expandAllBtn = h('button', {id: 'g-expand-all', text: 'Expand all', onclick: () => { state.expandAll = !state.expandAll; loadSvg(); }});
  const collapseBtn = h('button', {id: 'g-collapse', text: 'Collapse all', onclick: () => { state.expandAll = false; state.expand.clear(); loadSvg(); }});
  const fitBtn = h('button', {text: 'Fit', title: 'fit the graph in the view (or double-click it)', onclick: () => fit()});
  const legend = h('div', {class: 'legend', id: 'g-legend'});
  const notes = h('div', {class: 'notes', id: 'g-notes', hidden: true});
  const lod = h('span', {class: 'hint', id: 'g-lod'});
  const viewBox = h('div', {class: 'graph-view', id: 'g-view'});
  const side = h('aside', {class: 'side', id: 'g-side', hidden: true});

  append(page, [
    h('div', {class: 'graph-main'},
      h('div', {class: 'toolbar'}, h('label', null, 'session', sessionSel), h('label', null, 'version', versionSel),
        h('label', null, 'colour', colorSel), h('label', null, 'run', runSel), search, datalist, expandAllBtn, collapseBtn, fitBtn),
      h('div', {class: 'toolbar'}, legend, h('span', {class: 'hint',
        text: 'drag: pan · wheel: zoom · click a box: open it · click a cluster label: close it · click a node: details'}), lod),
      notes, viewBox),
    side,
  ]);

  /* The drawing's parameters (the highlight is not one: it is outlined here, on the drawing). */
  function svgParams() {
    return {session: state.session, version: state.version, run: state.run, color: state.color,
            expand: [...state.expand].sort().join(','), expand_all: state.expandAll ? 1 : null};
  }
  function saveUrl() {
    setParams({session: state.session, version: state.version, run: state.run, color: state.color === 'device' ? '' : state.color,
               expand: [...state.expand].sort(), expand_all: state.expandAll ? 1 : '', highlight: state.highlight, node: state.selected});
  }

  async function refreshPickers() {
    namesOf = null;   /* the log changed: the search names are read again */
    const sessions = await api('/api/sessions');
    if (!sessions) return;
    if (!sessions.length) { tide.message('The run log has no sessions yet.', 'info'); return; }
    if (!state.session) state.session = String(sessions[sessions.length - 1].id);
    clear(sessionSel);
    for (const s of sessions.slice().reverse()) sessionSel.appendChild(option(s.id, 'session ' + s.id + (s.label ? ' · ' + s.label : '')));
    sessionSel.value = state.session;
    const graphs = await api('/api/graphs', {session: state.session});
    clear(versionSel).appendChild(option('', 'latest'));
    for (const g of (graphs || []).slice().reverse()) { const o = option(g.version, 'v' + g.version + ' · ' + g.nodes + ' nodes'); o.title = g.created_at; versionSel.appendChild(o); }
    versionSel.value = state.version;
    const runs = await api('/api/runs', {session: state.session, traced: 1, limit: 200});
    clear(runSel).appendChild(option('', 'latest traced'));
    for (const r of (runs ? runs.runs : []).slice().reverse()) runSel.appendChild(option(r.id, 'run ' + r.id + ' · step ' + r.step));
    runSel.value = state.run;
  }

  /* The node names for search and "collapse", and their device colours (they depend on the session,
   * version and run only, so they are fetched again only when those change or the log grows). */
  async function loadNames() {
    const key = state.session + '/' + state.version + '/' + state.run;
    if (namesOf === key) return;
    const graph = await api('/api/graph', {session: state.session, version: state.version, run: state.run}, {quiet: true});
    if (!graph || key !== state.session + '/' + state.version + '/' + state.run) return;   /* the choice moved on meanwhile */
    namesOf = key;
    names = graph.nodes.map((n) => n.name);
    colors = new Map(graph.nodes.map((n) => [n.name, n.color]));
    clear(datalist);
    const scopes = new Set();
    for (const n of names) { const p = n.split('/'); for (let i = 1; i < p.length; i++) scopes.add(p.slice(0, i).join('/')); }
    for (const n of [...scopes].sort().concat(names.slice(0, 2000))) datalist.appendChild(h('option', {value: n}));
  }

  /* Draws the graph. opts.zoomTo: the id of an element to zoom to (a scope just opened); opts.keepView:
   * keep the current view (colours changed, not the layout's extent). */
  async function loadSvg(opts) {
    opts = opts || {};
    saveUrl();
    expandAllBtn.textContent = state.expandAll ? 'Scopes as chosen' : 'Expand all';
    const answer = await drawingGuard(() => Promise.all([
      api('/api/graph.svg', svgParams(), {text: true}),
      api('/api/graph/legend', {...svgParams(), highlight: state.highlight}, {quiet: true}),
      loadNames(),
    ]));
    if (answer === tide.STALE) return;   /* a newer drawing was asked for meanwhile */
    const [text, leg] = answer;
    if (leg) { drawLegend(leg); drawNotes(leg.drawing); }
    if (text === null) return;
    const doc = new DOMParser().parseFromString(text, 'image/svg+xml');
    if (doc.getElementsByTagName('parsererror').length || doc.documentElement.nodeName !== 'svg') {
      tide.message('/api/graph.svg: the server sent something that is not SVG');
      return;
    }
    const svg = document.importNode(doc.documentElement, true);
    for (const s of svg.querySelectorAll('script, foreignObject')) s.remove();   /* belt and braces */
    const vb = (svg.getAttribute('viewBox') || '').split(/[\s,]+/).map(Number);
    const oldBase = base;
    base = vb.length === 4 && vb.every(isFinite) ? {x: vb[0], y: vb[1], w: vb[2], h: vb[3]}
                                                : {x: 0, y: 0, w: parseFloat(svg.getAttribute('width')) || 800, h: parseFloat(svg.getAttribute('height')) || 600};
    svg.removeAttribute('width'); svg.removeAttribute('height');
    svg.setAttribute('preserveAspectRatio', 'xMidYMid meet');
    clear(viewBox).appendChild(svg);
    svgEl = svg;
    fitLabels();
    const sameExtent = oldBase && oldBase.w === base.w && oldBase.h === base.h;
    if (opts.keepView && view && sameExtent) applyView();
    else if (opts.zoomTo && zoomTo(opts.zoomTo)) { /* zoomed */ }
    else if (state.highlight && leg && leg.drawing && leg.drawing.highlight) zoomTo(leg.drawing.highlight, true);
    else fit();
    markSelected();
    outline(leg && leg.drawing ? leg.drawing.highlight : null);
  }

  function drawLegend(leg) {
    clear(legend).appendChild(h('span', {class: 'muted', text: (leg.mode === 'time' ? 'time' : 'device') + ': '}));
    for (const e of leg.entries || [])
      legend.appendChild(h('span', {class: 'entry'}, h('span', {class: 'swatch', style: {background: e.color}}), e.label));
    /* the colour run's fused groups (docs/fusion.md), outlined in the drawing */
    const f = leg.fused;
    if (f && f.groups > 0)
      legend.appendChild(h('span', {class: 'entry', id: 'g-fused', title: 'element-wise nodes that ran as one pass over the data; click one for its group'},
        h('span', {class: 'swatch outline', style: {borderColor: f.color}}),
        'fused: ' + f.groups + (f.groups === 1 ? ' group, ' : ' groups, ') + f.nodes + ' nodes'));
  }
  /* What the cap changed (the server's notes), above the drawing. */
  function drawNotes(d) {
    clear(notes);
    notes.hidden = !d || !d.notes || !d.notes.length;
    if (notes.hidden) return;
    append(notes, [h('b', {text: d.nodes + ' nodes, ' + d.items + ' drawn items (cap ' + d.max_items + '). '}),
      d.notes.map((n) => h('span', {text: n + ' '}))]);
  }

  /* Graphviz measured the labels with its own font metrics; the browser's font may be wider. Any label
   * wider than its box is squeezed to fit. */
  function fitLabels() {
    for (const g of svgEl.querySelectorAll('g.node')) {
      const shape = g.querySelector('ellipse, polygon, path');
      if (!shape || !shape.getBBox) continue;
      const room = shape.getBBox().width - 6;
      for (const t of g.querySelectorAll('text')) {
        if (t.getComputedTextLength && t.getComputedTextLength() > room && room > 0) {
          t.setAttribute('textLength', String(room));
          t.setAttribute('lengthAdjust', 'spacingAndGlyphs');
        }
      }
    }
  }

  /* ------------------------------------------------------------------ pan, zoom, level of detail */
  function fit() {
    if (!base) return;
    view = {...base};
    applyView();
  }
  function applyView() {
    if (!svgEl || !view) return;
    svgEl.setAttribute('viewBox', [view.x, view.y, view.w, view.h].join(' '));
    levelOfDetail();
  }
  /* Hides text that would be smaller than LEGIBLE_PX on screen: op nodes' names first (12 pt), then the
   * boxes' (14 pt); they appear as you zoom in. */
  function levelOfDetail() {
    const m = svgEl.getScreenCTM();
    const scale = m ? m.a : 1;
    const small = 12 * scale < LEGIBLE_PX, tiny = 14 * scale < LEGIBLE_PX;
    svgEl.classList.toggle('lod-small', small);
    svgEl.classList.toggle('lod-tiny', tiny);
    lod.textContent = tiny ? 'zoom in to read the names' : small ? 'zoom in to read the op names' : '';
  }
  /* The SVG user-space point under a client position. */
  function toSvg(cx, cy) {
    const m = svgEl.getScreenCTM();
    if (!m) return {x: 0, y: 0};
    const p = new DOMPoint(cx, cy).matrixTransform(m.inverse());
    return {x: p.x, y: p.y};
  }
  viewBox.addEventListener('wheel', (e) => {
    if (!svgEl || !view) return;
    e.preventDefault();
    const k = Math.exp(Math.max(-0.5, Math.min(0.5, e.deltaY * 0.0015)));
    const p = toSvg(e.clientX, e.clientY);
    const w = Math.min(Math.max(view.w * k, base.w / 200), base.w * 20);
    const f = w / view.w;
    view = {x: p.x - (p.x - view.x) * f, y: p.y - (p.y - view.y) * f, w, h: view.h * f};
    applyView();
  }, {passive: false});
  let drag = null;
  viewBox.addEventListener('mousedown', (e) => {
    if (e.button !== 0 || !svgEl) return;
    drag = {x: e.clientX, y: e.clientY, view: {...view}, moved: false};
  });
  window.addEventListener('mousemove', (e) => {
    if (!drag) return;
    const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
    if (!drag.moved && Math.hypot(dx, dy) < 4) return;
    drag.moved = true;
    viewBox.classList.add('dragging');
    const m = svgEl.getScreenCTM();
    const s = m ? m.a : 1;
    view = {...drag.view, x: drag.view.x - dx / s, y: drag.view.y - dy / s};
    applyView();
  });
  window.addEventListener('mouseup', () => { setTimeout(() => { drag = null; }, 0); viewBox.classList.remove('dragging'); });
  viewBox.addEventListener('dblclick', (e) => { if (!e.target.closest('g.node')) fit(); });
  window.addEventListener('resize', () => { if (svgEl) levelOfDetail(); });

  /* The box of element id in the SVG's user space, or null. */
  function boxOf(id) {
    const el = findById(id);
    if (!el || !el.getBBox) return null;
    const b = el.getBBox(), m = el.getCTM && el.getCTM(), root = svgEl.getCTM();
    if (!m || !root) return b;
    const t = root.inverse().multiply(m);
    const p0 = new DOMPoint(b.x, b.y).matrixTransform(t), p1 = new DOMPoint(b.x + b.width, b.y + b.height).matrixTransform(t);
    return {x: Math.min(p0.x, p1.x), y: Math.min(p0.y, p1.y), width: Math.abs(p1.x - p0.x), height: Math.abs(p1.y - p0.y)};
  }
  /* Zooms to element id: its whole box with a margin (a scope just opened), or, for a single item
   * (center), a view around it wide enough to read. False when it is not in the drawing. */
  function zoomTo(id, center) {
    const b = boxOf(id);
    if (!b) return false;
    const aspect = base.h / base.w || 1;
    let w = center ? Math.min(base.w, Math.max(400, b.width * 4)) : Math.min(base.w * 1.05, Math.max(b.width * 1.15, b.height * 1.15 / aspect, 200));
    w = Math.max(w, 1);
    const hh = w * aspect;
    view = {x: b.x + b.width / 2 - w / 2, y: b.y + b.height / 2 - hh / 2, w, h: hh};
    applyView();
    return true;
  }

  /* ------------------------------------------------------------------ clicks */
  viewBox.addEventListener('click', (e) => {
    if (drag && drag.moved) return;
    const g = e.target.closest('g.node, g.cluster');
    if (!g || !g.id) return;
    const id = g.id;
    if (g.classList.contains('cluster')) {
      if (id.startsWith('cluster:') && !id.startsWith('cluster:__') && e.target.closest('text')) collapse(id.slice(8));
    } else if (id.startsWith('scope:')) {
      expandPath(id.slice(6));
      loadSvg({zoomTo: 'cluster:' + id.slice(6)});
    } else if (id.startsWith('group:') || id.startsWith('series:')) {
      /* dissolve the group (its id is the name to list) or keep the series' members apart (its key) */
      state.expand.add(id.startsWith('group:') ? id : id.slice(7));
      loadSvg();
    } else if (id.startsWith('ops:')) {
      tide.message('These nodes are bundled because their level has more nodes than the drawing can lay out ' +
                   '(see the note above the drawing); open a scope, or search a node to see where it is.', 'info');
    } else if (id.startsWith('node:')) {
      showNode(id.slice(5));
    } else if (id.startsWith('stub:')) {
      showNode(id.slice(5, id.lastIndexOf('@') > 5 ? id.lastIndexOf('@') : undefined));
    }
  });
  function expandPath(scope) {
    const parts = scope.split('/');
    for (let i = 1; i <= parts.length; i++) state.expand.add(parts.slice(0, i).join('/'));
  }
  function collapse(scope) {
    if (state.expandAll) {   /* turn "all" into the explicit set of scopes, minus this one */
      state.expandAll = false;
      for (const n of names) { const p = n.split('/'); for (let i = 1; i < p.length; i++) state.expand.add(p.slice(0, i).join('/')); }
    }
    for (const s of [...state.expand]) if (s === scope || s.startsWith(scope + '/')) state.expand.delete(s);
    loadSvg();
  }

  function markSelected() {
    if (!svgEl) return;
    for (const g of svgEl.querySelectorAll('g.selected')) g.classList.remove('selected');
    const el = state.selected ? findById('node:' + state.selected) : null;
    if (el) el.classList.add('selected');
  }
  function findById(id) { return svgEl ? [...svgEl.querySelectorAll('g')].find((x) => x.id === id) : null; }
  /* Outlines the element that draws the highlight (a node, or the box or cluster that holds it). */
  function outline(id) {
    if (!svgEl) return;
    for (const g of svgEl.querySelectorAll('g.highlight')) g.classList.remove('highlight');
    const el = id ? findById(id) : null;
    if (el) el.classList.add('highlight');
    svgEl.dataset.highlight = el ? id : '';
  }

  /* Outlines name on the drawing shown: no new layout. The server's plan says which item draws it
   * (the legend's drawing.highlight); a node drawn as itself needs no request at all. */
  async function highlight(name) {
    state.highlight = name;
    saveUrl();
    if (!name) { outline(null); return; }
    if (findById('node:' + name)) { outline('node:' + name); zoomTo('node:' + name, true); return; }
    const leg = await highlightGuard(() => api('/api/graph/legend', {...svgParams(), highlight: name}));
    if (leg === tide.STALE || !leg || !leg.drawing) return;
    outline(leg.drawing.highlight);
    if (leg.drawing.highlight) zoomTo(leg.drawing.highlight, true);
  }

  async function doSearch(text) {
    if (!text) { highlight(''); return; }
    const exact = names.find((n) => n === text);
    const isScope = !exact && names.some((n) => n.startsWith(text + '/'));
    const hit = exact || (isScope ? text : names.find((n) => n.includes(text)));
    if (!hit) { tide.message('no node or scope matches "' + text + '"', 'info'); return; }
    tide.message('');
    await highlight(hit);
    if (!isScope) showNode(hit);
  }

  /* ------------------------------------------------------------------ the node panel */
  async function showNode(name) {
    state.selected = name;
    saveUrl();
    markSelected();
    const n = await panelGuard(() => api('/api/node', {session: state.session, version: state.version, name, run: state.run}));
    if (!n || n === tide.STALE) return;
    const link = (x) => {
      const target = tide.inputNode(x);
      return h('li', null, h('a', {href: '#', text: String(x), onclick: (e) => { e.preventDefault(); reveal(target); }}));
    };
    clear(side).hidden = false;
    append(side, [
      h('div', {style: {display: 'flex', justifyContent: 'space-between'}}, h('h2', {text: 'node'}),
        h('button', {class: 'close', text: '×', title: 'close', onclick: () => { panelGuard(() => null); side.hidden = true; state.selected = ''; saveUrl(); markSelected(); }})),
      h('h1', {id: 'n-name', text: n.name}),
      h('table', {class: 'kv'}, h('tbody', null,
        h('tr', null, h('td', {text: 'op'}), h('td', {id: 'n-op', text: n.op})),
        h('tr', null, h('td', {text: 'device'}), h('td', null, h('span', {class: 'swatch', id: 'n-swatch', style: {background: colors.get(n.name) || tide.UNPLACED}}),
          n.device || 'unplaced')),
        h('tr', null, h('td', {text: 'requested'}), h('td', {text: n.requested_device || '–'})),
        h('tr', null, h('td', {text: 'shapes'}), h('td', {id: 'n-shapes', text: n.shapes || '– (not timed)'})),
        h('tr', null, h('td', {text: 'time'}), h('td', {text: n.time_us === null || n.time_us === undefined
          ? (n.fused && n.fused.root !== n.name ? '– (ran inside ' + n.fused.root + "'s group)" : '– (not timed)') : tide.fmtUs(n.time_us)})),
        n.fused ? h('tr', null, h('td', {text: 'fused'}), h('td', {id: 'n-fused'},
          n.fused.root === n.name ? 'root of a group: ' : 'into ', n.fused.root === n.name ? null :
            h('a', {href: '#', text: n.fused.root, onclick: (e) => { e.preventDefault(); reveal(n.fused.root); }}),
          h('div', {class: 'muted', text: 'one pass over the data: ' + n.fused.members}))) : null)),
      h('h2', {text: 'attributes'}), h('pre', {class: 'attrs', text: n.attrs || '(none)'}),
      h('h2', {text: 'inputs (' + (n.inputs || []).length + ')'}), h('ul', null, (n.inputs || []).map(link)),
      (n.control_inputs || []).length ? [h('h2', {text: 'control inputs'}), h('ul', null, n.control_inputs.map(link))] : null,
      h('h2', {text: 'consumers (' + (n.consumers || []).length + ')'}), h('ul', {id: 'n-consumers'}, (n.consumers || []).map(link)),
      h('h2', {text: 'latest tensor'}),
      n.tensor ? tensorStats(n.tensor) : h('p', {class: 'muted', text: 'not logged (:watch ' + n.name + ' logs it)'}),
      h('p', null, h('a', {href: tide.url('/tensor', {node: n.name, output: 0, session: state.session}), text: 'tensor page →'})),
    ]);
  }
  function tensorStats(t) {
    const rows = [['step', t.step], ['dtype', t.dtype], ['shape', '[' + (t.shape || []).join(', ') + ']'], ['min', t.min], ['max', t.max],
                  ['mean', t.mean], ['std', t.std], ['NaN / Inf', t.nan_count + ' / ' + t.inf_count]];
    return h('table', {class: 'kv', id: 'n-tensor'}, h('tbody', null, rows.map(([k, v]) => h('tr', null, h('td', {text: k}), h('td', {class: 'mono', text: tide.fmtNum(v)})))));
  }
  /* Shows node name: outlines it (or the box that holds it) and opens its panel. */
  function reveal(name) {
    highlight(name);
    showNode(name);
  }

  tide.topbar('graph');
  tide.onStatus(async (s, changed) => {
    if (changed.first) {
      await refreshPickers();
      await loadSvg();
      if (state.selected) showNode(state.selected);
      return;
    }
    if (changed.graph || changed.sessions || changed.run) {
      await refreshPickers();
      /* Only a view that follows "latest" (version or run) changes with the log. */
      if ((changed.graph && !state.version) || (changed.run && !state.run)) await loadSvg({keepView: true});
    }
  });
})();
