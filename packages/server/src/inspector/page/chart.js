/**
 * The statechart, laid out here from the machine graph the server sends: top-level states in
 * definition order as boxes on one row; a transition to a state further right arcs above the row,
 * one to a state further left arcs below, so arrows never cross a box and their direction reads at
 * a glance. The current state (with its substate) and the arrow just taken are highlighted.
 */

const SVG = 'http://www.w3.org/2000/svg';
const BOX_W = 118;
const BOX_H = 46;
const GAP = 46;
const PAD = 14;

function svgElement(name, attributes = {}, text) {
  const element = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, String(value));
  if (text !== undefined) element.textContent = text;
  return element;
}

function arcHeight(span) {
  return 20 + 28 * span;
}

/** `readMetadata done` + `readMetadata failed` read as `readMetadata done/failed`. */
function mergeOutcomes(labels) {
  const merged = new Map();
  for (const label of labels) {
    const match = /^(\S+) (done|failed)$/.exec(label);
    const key = match === null ? label : match[1];
    const outcomes = merged.get(key) ?? [];
    if (match !== null) outcomes.push(match[2]);
    merged.set(key, outcomes);
  }
  return [...merged].map(([key, outcomes]) => (outcomes.length === 0 ? key : `${key} ${outcomes.join('/')}`));
}

function edgeLabel(triggers) {
  const labels = mergeOutcomes([...new Set(triggers.map((trigger) => trigger.label))]);
  const full = labels.join(' · ');
  if (full.length <= 26 || labels.length <= 1) return full;
  return `${labels.slice(0, 2).join(' · ')}${labels.length > 2 ? ` +${labels.length - 2}` : ''}`;
}

/** Draws `machine` into `svg`; returns the handles {@link highlightChart} needs. */
export function drawChart(svg, machine) {
  svg.replaceChildren();
  const index = new Map(machine.states.map((state, position) => [state.key, position]));
  const spanOf = (edge) => Math.abs((index.get(edge.to) ?? 0) - (index.get(edge.from) ?? 0));
  const forward = machine.edges.filter((edge) => (index.get(edge.to) ?? 0) > (index.get(edge.from) ?? 0));
  const backward = machine.edges.filter((edge) => (index.get(edge.to) ?? 0) < (index.get(edge.from) ?? 0));
  const maxAbove = Math.max(0, ...forward.map(spanOf));
  const maxBelow = Math.max(0, ...backward.map(spanOf));
  const top = PAD + 16 + (maxAbove === 0 ? 0 : 0.75 * arcHeight(maxAbove));
  const bottom = top + BOX_H;
  const height = bottom + PAD + 22 + (maxBelow === 0 ? 0 : 0.75 * arcHeight(maxBelow));
  const width = PAD * 2 + machine.states.length * BOX_W + (machine.states.length - 1) * GAP;
  svg.setAttribute('viewBox', `0 0 ${width} ${Math.ceil(height)}`);
  const centerX = (position) => PAD + position * (BOX_W + GAP) + BOX_W / 2;

  const defs = svgElement('defs');
  for (const [id, className] of [
    ['arrow', 'arrow-head'],
    ['arrow-taken', 'arrow-head taken'],
  ]) {
    const marker = svgElement('marker', {
      id: `chart-${id}`,
      viewBox: '0 0 10 10',
      refX: 9,
      refY: 5,
      markerWidth: 7,
      markerHeight: 7,
      orient: 'auto-start-reverse',
    });
    marker.append(svgElement('path', { d: 'M0,0 L10,5 L0,10 z', class: className }));
    defs.append(marker);
  }
  svg.append(defs);

  const edges = new Map();
  const labels = svgElement('g', { class: 'labels' });
  for (const edge of machine.edges) {
    const from = index.get(edge.from);
    const to = index.get(edge.to);
    if (from === undefined || to === undefined) continue;
    const span = Math.abs(to - from);
    const above = to > from;
    const nest = 9 * (span - 1);
    const x1 = centerX(from) + (above ? 30 - nest : -30 + nest);
    const x2 = centerX(to) + (above ? -30 + nest : 30 - nest);
    const y = above ? top : bottom;
    const bend = above ? -arcHeight(span) : arcHeight(span);
    const path = svgElement('path', {
      d: `M${x1},${y} C${x1},${y + bend} ${x2},${y + bend} ${x2},${y}`,
      class: 'edge',
      'marker-end': 'url(#chart-arrow)',
    });
    const title = edge.triggers
      .map((trigger) =>
        trigger.from ? `${trigger.event} (from ${edge.from}.${trigger.from})` : trigger.event,
      )
      .join('\n');
    path.append(svgElement('title', {}, `${edge.from} → ${edge.to}\n${title}`));
    svg.append(path);
    const labelY = y + 0.75 * bend + (above ? -5 : 12);
    const label = svgElement(
      'text',
      { x: (x1 + x2) / 2, y: labelY, class: 'edge-label' },
      edgeLabel(edge.triggers),
    );
    label.append(svgElement('title', {}, title));
    labels.append(label);
    edges.set(`${edge.from}->${edge.to}`, path);
  }

  const boxes = new Map();
  for (const [position, state] of machine.states.entries()) {
    const x = PAD + position * (BOX_W + GAP);
    const group = svgElement('g', { class: `state${state.final ? ' final' : ''}`, 'data-state': state.key });
    group.append(svgElement('rect', { x, y: top, width: BOX_W, height: BOX_H, rx: 9 }));
    group.append(svgElement('text', { x: x + BOX_W / 2, y: top + 20, class: 'state-name' }, state.key));
    const sub = svgElement('text', { x: x + BOX_W / 2, y: top + 36, class: 'state-sub' }, '');
    group.append(sub);
    if (state.substates.length > 0) {
      group.append(svgElement('title', {}, `${state.key}: ${state.substates.join(', ')}`));
    }
    svg.append(group);
    boxes.set(state.key, { group, sub });
  }
  svg.append(labels);
  for (const global of machine.global) {
    const position = index.get(global.to);
    if (position === undefined) continue;
    svg.append(
      svgElement(
        'text',
        { x: centerX(position), y: bottom + 16, class: 'global-note' },
        `${global.event}: from any state`,
      ),
    );
  }
  return { boxes, edges };
}

/** Marks `current` (showing `substate` in its box) and the arrow `lastEdge` (`[from, to]` or null). */
export function highlightChart(chart, current, substate, lastEdge) {
  for (const [key, box] of chart.boxes) {
    const active = key === current;
    box.group.classList.toggle('current', active);
    const sub = active && substate !== null ? substate : '';
    if (box.sub.textContent !== sub) box.sub.textContent = sub;
  }
  const taken = lastEdge === null ? '' : `${lastEdge[0]}->${lastEdge[1]}`;
  for (const [key, path] of chart.edges) {
    const isTaken = key === taken;
    path.classList.toggle('taken', isTaken);
    path.setAttribute('marker-end', `url(#${isTaken ? 'chart-arrow-taken' : 'chart-arrow'})`);
  }
}
