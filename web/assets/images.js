/* images.js — the image summaries panel of the runs page (TensorBoard's images dashboard): a card per
 * ImageSummary tag of each session shown, its images at a step chosen with a slider (the latest by
 * default; a step between two logged ones shows the latest before it), drawn with tide.pictures. The
 * runs page calls tide.imagesPanel(box).load(sessions) when its sessions or the log change. Needs
 * common.js and pictures.js. */
'use strict';
tide.imagesPanel = (box) => {
  const {h, api, clear, append} = tide;
  const guard = tide.latest();
  const cards = new Map();   /* session|node -> {session, body, slider, label, image, following, guard, drawnRun} */

  /* The values of an image summary come in pages of the API's largest limit (100,000): a batch of
   * 3 RGB 224 x 224 images is 451,584 of them. Past MAX_BYTES (the run log's value cap may be raised)
   * the card says they are too large instead of asking for them. */
  const PAGE = 100000, MAX_BYTES = 4 << 20;
  async function values(c, t) {
    const parts = [];
    for (let offset = 0; offset < t.num_elements; offset += PAGE) {
      const v = await api('/api/tensor/values', {node: c.image.node, output: 0, session: c.session, step: t.step, offset, limit: PAGE}, {quiet: true});
      if (!v) return null;
      parts.push(v.values);
    }
    return parts.flat();
  }

  /* The images of one summary at step (-1: the latest) into its card; an answer for a step chosen
   * before the card's latest choice is dropped (c.guard). A card already showing that run's images
   * asks for no values again (a card that follows the latest step is refreshed at every poll). */
  async function show(c, step) {
    const answer = await c.guard(async () => {
      const t = await api('/api/tensor', {node: c.image.node, output: 0, session: c.session, step}, {quiet: true});
      if (!t || !t.has_value || t.num_elements > MAX_BYTES || c.drawnRun === t.run) return {t, v: null};
      return {t, v: await values(c, t)};
    });
    if (answer === tide.STALE || !answer.t) return;
    const {t, v} = answer;
    c.label.textContent = 'step ' + t.step;
    c.slider.value = String(t.step);
    if (t.has_value && c.drawnRun === t.run && t.num_elements <= MAX_BYTES) return;   /* drawn already */
    clear(c.body);
    c.drawnRun = null;
    const note = !t.has_value ? 'the images of step ' + t.step + ' (' + t.num_elements + ' bytes) were not stored: they are over the ' +
                                'run log\'s value cap (1 MiB unless changed with :log cap BYTES); a smaller max_images fits'
               : t.num_elements > MAX_BYTES ? 'the images of step ' + t.step + ' are too large to draw here (' + t.num_elements + ' bytes)' : null;
    if (note) { c.body.appendChild(h('p', {class: 'muted', text: note})); return; }
    if (!v) return;
    const cv = tide.pictures.images(c.body, t.shape, v.map((x) => tide.num(x)), t.dtype === 'uint8');
    cv.removeAttribute('id');
    cv.dataset.tag = c.image.tag;
    cv.dataset.step = String(t.step);
    c.drawnRun = t.run;
  }

  /* Shows the image summaries of sessions (ids); keeps the cards that stay, and their chosen steps. */
  async function load(sessions) {
    const lists = await guard(() => Promise.all(sessions.map((id) => api('/api/images', {session: id}, {quiet: true}))));
    if (lists === tide.STALE) return;
    const seen = new Set();
    lists.forEach((l, i) => {
      for (const image of l ? l.images : []) {
        const key = sessions[i] + '|' + image.node;
        seen.add(key);
        let c = cards.get(key);
        if (!c) {
          const slider = h('input', {type: 'range', class: 'image-step', min: String(image.first_step), step: '1'});
          const label = h('span', {class: 'muted'}), body = h('div');
          c = {session: sessions[i], slider, label, body, following: true, guard: tide.latest()};
          slider.addEventListener('input', () => { c.following = Number(slider.value) >= Number(slider.max); show(c, Number(slider.value)); });
          box.appendChild(h('div', {class: 'card image-card', 'data-tag': image.tag},
            h('h3', null, image.tag, h('span', {class: 'kind', text: 'image · session ' + sessions[i] + ' · ' + image.count + ' steps'})),
            h('div', {class: 'toolbar'}, slider, label), body));
          cards.set(key, c);
        }
        c.image = image;
        c.slider.max = String(image.last_step);
        if (c.following) show(c, -1);   /* a card that follows the latest step moves on with the log */
      }
    });
    for (const [key, c] of cards) if (!seen.has(key)) { c.body.closest('.card').remove(); cards.delete(key); }
    box.closest('.panel').hidden = cards.size === 0;
  }
  return {load};
};
