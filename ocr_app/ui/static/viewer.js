// Page viewer (ocr_app/ui/page_html.py). Runs once as the gr.HTML's js_on_load: `element` is the
// component, `watch` re-runs a callback after each re-render (a new page). Handlers are delegated from
// `element`, so they survive re-renders; the zoom is re-applied after each one.
const state = { zoom: 1, fit: "width" };
const q = (sel) => element.querySelector(sel);
const ZOOM_STEP = 1.25;
const MIN_LABEL_PX = 11; // block labels on the page never get smaller than this on screen
const COMPACT_K = 1.6; // labels grown more than this show their number only ("3" for "3 text")

function fitZoom(fit) {
  const box = q(".ocr-scroll"), view = q(".ocr-viewer");
  if (!box || !view || fit !== "page") return 1;
  const w = +view.dataset.width, h = +view.dataset.height;
  // the pane grows with the page up to its max-height: fit the page into that
  const room = parseFloat(getComputedStyle(box).maxHeight) || box.clientHeight;
  return w && h ? Math.min(1, (room * w) / (h * box.clientWidth)) : 1;
}

function scaleLabels() {
  // page pixels -> screen pixels; labels grow about their anchor until their text is MIN_LABEL_PX tall
  const stage = q(".ocr-stage"), svg = q(".ocr-boxes"), view = q(".ocr-viewer");
  if (!stage || !svg || !view) return;
  const s = stage.getBoundingClientRect().width / (+view.dataset.width || 1);
  const size = +svg.dataset.labelSize || 10;
  const k = s > 0 ? Math.max(1, MIN_LABEL_PX / (size * s)) : 1;
  svg.style.setProperty("--ocr-label-k", k.toFixed(4));
  svg.classList.toggle("ocr-compact", k > COMPACT_K); // grown this much, whole names would hide the page
}

function applyZoom() {
  const stage = q(".ocr-stage");
  if (!stage) return;
  if (state.fit) state.zoom = fitZoom(state.fit);
  stage.style.width = (state.zoom * 100).toFixed(2) + "%";
  const label = q(".ocr-zoom-label");
  if (label) label.textContent = Math.round(state.zoom * 100) + "%";
  element.dataset.zoomLevel = state.zoom.toFixed(3);
  scaleLabels();
}

function zoomBy(factor) {
  const box = q(".ocr-scroll");
  if (!box) return;
  // keep the point in the middle of the view where it is
  const cx = (box.scrollLeft + box.clientWidth / 2) / Math.max(1, box.scrollWidth);
  const cy = (box.scrollTop + box.clientHeight / 2) / Math.max(1, box.scrollHeight);
  state.fit = null;
  state.zoom = Math.min(8, Math.max(0.1, state.zoom * factor));
  applyZoom();
  box.scrollLeft = cx * box.scrollWidth - box.clientWidth / 2;
  box.scrollTop = cy * box.scrollHeight - box.clientHeight / 2;
}

function scrollInto(pane, target) {
  // scroll only `pane` (never the whole page) so that `target` is in view, a third from the top
  if (!pane || !target) return;
  const p = pane.getBoundingClientRect(), t = target.getBoundingClientRect();
  if (t.top < p.top || t.bottom > p.bottom) pane.scrollTop += t.top - p.top - Math.max(0, (p.height - t.height) / 3);
  if (t.left < p.left || t.right > p.right) pane.scrollLeft += t.left - p.left - Math.max(0, (p.width - t.width) / 2);
}

function mark(id, cls) {
  element.querySelectorAll("." + cls).forEach((el) => el.classList.remove(cls));
  if (id !== null) element.querySelectorAll(`[data-block="${id}"]`).forEach((el) => el.classList.add(cls));
}

function show(el, cls) {
  const id = el.dataset.block;
  mark(id, cls);
  if (el.closest(".ocr-md-pane")) scrollInto(q(".ocr-scroll"), q(`.ocr-box[data-block="${id}"]`));
  else scrollInto(q(".ocr-md-pane"), q(`.ocr-block[data-block="${id}"]`));
}

const blockOf = (node) => (node && node.closest ? node.closest("[data-block]") : null);

element.addEventListener("mouseover", (e) => {
  const el = blockOf(e.target);
  if (el && !pan.moved) show(el, "ocr-hl");
});
element.addEventListener("mouseout", (e) => {
  const el = blockOf(e.target), to = blockOf(e.relatedTarget);
  if (el && !(to && to.dataset.block === el.dataset.block)) mark(null, "ocr-hl");
});

// Pan by dragging the image; a drag is not a click on the box under the pointer.
const pan = { on: false, moved: false, x: 0, y: 0, left: 0, top: 0 };
element.addEventListener("mousedown", (e) => {
  const box = e.target.closest ? e.target.closest(".ocr-scroll") : null;
  if (!box || e.button !== 0) return;
  Object.assign(pan, { on: true, moved: false, x: e.clientX, y: e.clientY, left: box.scrollLeft, top: box.scrollTop });
  e.preventDefault();
});
window.addEventListener("mousemove", (e) => {
  const box = q(".ocr-scroll");
  if (!pan.on || !box) return;
  const dx = e.clientX - pan.x, dy = e.clientY - pan.y;
  if (!pan.moved && Math.abs(dx) + Math.abs(dy) < 5) return;
  pan.moved = true;
  box.classList.add("ocr-panning");
  box.scrollLeft = pan.left - dx;
  box.scrollTop = pan.top - dy;
});
window.addEventListener("mouseup", () => {
  if (!pan.on) return;
  pan.on = false;
  const box = q(".ocr-scroll");
  if (box) box.classList.remove("ocr-panning");
  setTimeout(() => (pan.moved = false), 0);
});

element.addEventListener("click", (e) => {
  const button = e.target.closest ? e.target.closest("button[data-zoom]") : null;
  if (button) {
    const how = button.dataset.zoom;
    if (how === "in") zoomBy(ZOOM_STEP);
    else if (how === "out") zoomBy(1 / ZOOM_STEP);
    else { state.fit = how; applyZoom(); }
    return;
  }
  const el = blockOf(e.target);
  if (el && !pan.moved) show(el, "ocr-active");
});

// Ctrl + wheel (and a trackpad pinch, which browsers report the same way) zooms the page image.
element.addEventListener(
  "wheel",
  (e) => {
    if (!e.ctrlKey || !(e.target.closest && e.target.closest(".ocr-scroll"))) return;
    e.preventDefault();
    zoomBy(e.deltaY < 0 ? ZOOM_STEP : 1 / ZOOM_STEP);
  },
  { passive: false },
);

// The pane changes width with the window and when its tab is shown again: refit and rescale the labels.
new ResizeObserver(() => (state.fit ? applyZoom() : scaleLabels())).observe(element);
if (typeof watch === "function") watch("value", applyZoom);
applyZoom();
