// The simulate page's step timeline: one row per pipeline stage (the rank the executor traced,
// data-parallel replica 0), with three lanes: compute (forward and backward passes, the
// optimizer; grey where the stage computes nothing: bubble and exposed waits), PP sends and DP
// collectives. Zoom with the slider or the mouse wheel.
'use strict';

function megasimTimeline(d, section, chart, colours, fmt) {
  const card = section('Step timeline per pipeline stage',
    'One row per stage: compute on top (grey where it waits: the bubble and exposed ' +
    'communication), PP sends in the middle, DP collectives below. TP communication runs inside ' +
    'the compute tasks (its exposed share is in the breakdown). Drag the slider to zoom.', true);
  if (!d.timeline_ns) {
    card.append(megasim.el('p', { class: 'note' }, 'No timeline in the data.'));
    return;
  }
  const ranks = d.timeline_ns.ranks;
  const stepEnd = d.step_time_s;
  const lanes = { compute: [0.05, 0.55], pp: [0.6, 0.77], dp: [0.8, 0.97] };
  const kinds = new Map();  // legend name → {lane, colour, items}
  const add = (name, lane, colour, row, spans, unit) => {
    if (!kinds.has(name)) kinds.set(name, { lane, colour, items: [] });
    for (const [a, b] of spans) kinds.get(name).items.push([row, a * unit, b * unit]);
  };
  // Compute-stream slices by their first word: the passes, the optimizer, the host's
  // synchronisation after each blocking PP exchange ("pp exchange sync") and the host's data
  // loading ("data loading"), each its own colour.
  const passNames = { F: 'forward', B: 'backward', W: 'weight gradients', optimizer: 'optimizer',
    pp: 'PP exchange sync', data: 'data loading',
    waiting: 'waiting for slower DP members (slowest gpu)' };
  // The wait for a DP group's slower members in the breakdown's slowest-GPU colour (it read
  // "waiting" in the other colour until 2026-12-06).
  const passColours = { pp: colours.other, data: '#b07aa1', waiting: colours.slowest };
  ranks.forEach((r, row) => {
    const busy = [];
    for (const [pass, spans] of Object.entries(r.compute)) {
      add(passNames[pass] || pass, 'compute', passColours[pass] || colours[pass] || colours.other,
        row, spans, 1e-9);
      busy.push(...spans);
    }
    busy.sort((x, y) => x[0] - y[0]);
    const idle = [];
    let t = 0;
    for (const [a, b] of busy) {
      if (a > t) idle.push([t, a]);
      t = Math.max(t, b);
    }
    if (t < stepEnd * 1e9) idle.push([t, stepEnd * 1e9]);
    add('compute idle (bubble, waits)', 'compute', colours.idle, row, idle, 1e-9);
    add('PP send', 'pp', colours.pp, row, r.pp_send, 1e-9);
    add('DP collective', 'dp', colours.dp, row, r.dp, 1e-9);
  });
  const render = (lane) => (params, api) => {
    const start = api.coord([api.value(1), api.value(0)]);
    const end = api.coord([api.value(2), api.value(0)]);
    const band = api.size([0, 1])[1];
    const top = start[1] - band / 2 + band * lanes[lane][0];
    const rect = echarts.graphic.clipRectByRect(
      { x: start[0], y: top, width: Math.max(end[0] - start[0], 0.5),
        height: band * (lanes[lane][1] - lanes[lane][0]) },
      { x: params.coordSys.x, y: params.coordSys.y, width: params.coordSys.width,
        height: params.coordSys.height });
    return rect && { type: 'rect', shape: rect, style: api.style() };
  };
  chart(card, {
    legend: { top: 0 },
    tooltip: { trigger: 'item', formatter: (p) => `${megasim.esc(p.seriesName)}<br>stage ` +
      `${ranks[p.value[0]].stage}: ${fmt.num(p.value[1], 4)}–${fmt.num(p.value[2], 4)} s` },
    grid: { left: 120, right: 30, top: 40, bottom: 70 },
    dataZoom: [{ type: 'slider', xAxisIndex: 0, filterMode: 'weakFilter', bottom: 10 },
      { type: 'inside', xAxisIndex: 0, filterMode: 'weakFilter' }],
    xAxis: { type: 'value', name: 's', min: 0, max: stepEnd,
      axisLabel: { formatter: (v) => fmt.num(v, 3) } },
    yAxis: { type: 'category', inverse: true,
      data: ranks.map((r) => `stage ${r.stage} (rank ${r.rank})`) },
    series: [...kinds].map(([name, k]) => ({
      name, type: 'custom', renderItem: render(k.lane), itemStyle: { color: k.colour },
      progressive: 0,  // draw every task at once, not over several frames
      encode: { x: [1, 2], y: 0 }, data: k.items,
    })),
  }, Math.max(260, 90 + 46 * ranks.length));
}
