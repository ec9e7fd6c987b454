/* images.js — the image summaries panel of the runs page (TensorBoard's images dashboard): a card per
 * ImageSummary tag of each session shown, its images at a step chosen with a slider (the latest by
 * default; a step between two logged ones shows the latest before it), drawn with tide.pictures. The
 * runs page calls tide.imagesPanel(box).load(sessions) when its sessions or the log change. Needs
 * common.js and pictures.js. */
'use strict';
tide.imagesPanel = (box) => {
  const {h, api, clear, append} = tide;
  const guard = tide.latest();
  const cards = new Map();   /* session|node -> {session, body, slider, label, image, following, guard} */

  /* The images of one summary at step (-1: the latest) into its card; an answer for a step chosen
   * before the card's latest choice is dropped (c.guard). */
  async function show(c, step) {
    const answer = await c.guard(async () => {
      const t = await api('/api/tensor', {node: c.image.node, output: 0, session: c.session, step}, {quiet: true});
      if (!t || !t.has_value) return {t, v: null};
      return {t, v: await api('/api/tensor/values', {node: c.image.node, output: 0, session: c.session, step: t.step, limit: 100000}, {quiet: true})};
    });
    if (answer === tide.STALE || !answer.t) return;
    const {t, v} = answer;
    c.label.textContent = 'step ' + t.step;
    c.slider.value = String(t.step);
    clear(c.body);
    if (!t.has_value) {
      c.body.appendChild(h('p', {class: 'muted', text: 'the images of step ' + t.step + ' (' + t.num_elements + ' bytes) were not stored: ' +
        'they are over the run log\'s value cap (1 MiB unless changed with :log cap BYTES); a smaller max_images fits'}));
      return;
    }
    if (!v) return;
    const cv = tide.pictures.images(c.body, v.shape, v.values.map((x) => tide.num(x)), t.dtype === 'uint8');
    cv.removeAttribute('id');
    cv.dataset.tag = c.image.tag;
    cv.dataset.step = String(t.step);
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
