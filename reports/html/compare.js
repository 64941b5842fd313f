// The compare page: every feasible plan as a point (tokens a second and MFU against memory
// headroom, one colour per TP × PP), the Pareto front of tokens a second against headroom, the
// fastest plans' breakdowns side by side (most tokens a second: variants may move different
// tokens a step), and every variant in a table with its reason when it cannot run.
'use strict';

(() => {
  const { data: d, colours, esc, section, chart, keyValues, table, fmt } = megasim;
  const label = (v) => v.label;
  const ok = d.variants.filter((v) => v.feasible);
  const fastest = [...ok].sort((a, b) => b.tokens_per_s - a.tokens_per_s);

  // The GPU counts and batches of the variants, as the text says them: jobs of different sizes
  // (--vary plan.dp) set side by side by tokens a second (the page said nothing of it until
  // 2026-12-05, while it named the larger job fastest).
  const sizes = [...new Set(ok.map((v) => v.plan.gpus))].sort((a, b) => a - b);
  const sized = sizes.length > 1;
  const batches = new Set(ok.map((v) => v.plan.global_batch));
  const gpus = (v) => (sized ? ` on ${fmt.num(v.plan.gpus, 0)} GPUs` : '');

  const card = section('Variants', null, true);
  const rows = [['variants', `${d.variants.length} (${ok.length} can run)`]];
  if (sized) {
    rows.push(['GPUs', `the variants run on ${sizes[0]} to ${sizes[sizes.length - 1]} GPUs: ` +
      'tokens a second and the Pareto front set jobs of different sizes side by side; MFU ' +
      'compares them per GPU']);
  } else if (sizes.length) {
    const verb = ok.length === d.variants.length ? 'runs' : 'that runs is';
    rows.push(['GPUs', `every variant ${verb} on ${sizes[0]} GPUs`]);
  }
  if (fastest.length) {
    const best = fastest[0];
    rows.push(['fastest (tokens a second)', `${label(best)}${gpus(best)}: ` +
      `${fmt.seconds(best.step_time_s)} s, ${fmt.num(best.tokens_per_s, 0)} tokens/s, ` +
      `MFU ${fmt.pct1(best.mfu)}`]);
    rows.push(['on the Pareto front', ok.filter((v) => v.pareto).map(label).join('; ')]);
  }
  keyValues(card, rows);

  // One series per TP × PP, and the front as a line.
  const scatter = (title, key, unit, format) => {
    const groups = new Map();
    for (const v of ok) {
      const g = `TP ${v.plan.tp} × PP ${v.plan.pp}`;
      if (!groups.has(g)) groups.set(g, []);
      groups.get(g).push({ value: [v.memory_headroom_gib, v[key]], name: label(v) });
    }
    const front = ok.filter((v) => v.pareto).sort((a, b) => a.memory_headroom_gib - b.memory_headroom_gib)
      .map((v) => ({ value: [v.memory_headroom_gib, v[key]], name: label(v) }));
    const c = section(title, 'Each point a plan that can run; the line joins the Pareto front ' +
      '(no other plan both moves more tokens a second and leaves more memory free).');
    chart(c, {
      legend: { bottom: 0, type: 'scroll' },
      tooltip: { trigger: 'item',
        formatter: (p) => `${esc(p.name)}<br>headroom ${fmt.num(p.value[0], 1)} GiB<br>${format(p.value[1])}` },
      grid: { left: 60, right: 20, top: 30, bottom: 60 },
      xAxis: { type: 'value', name: 'memory headroom (GiB)', nameLocation: 'middle', nameGap: 25,
        scale: true },
      yAxis: { type: 'value', name: unit, scale: true, axisLabel: { formatter: format } },
      series: [...[...groups].sort().map(([name, pts]) => ({ name, type: 'scatter', symbolSize: 10,
        data: pts })),
      { name: 'Pareto front', type: 'line', data: front, symbol: 'none',
        lineStyle: { type: 'dashed', color: '#333' }, itemStyle: { color: '#333' } }],
    }, 360);
  };
  if (ok.length) {
    scatter('Tokens a second against memory headroom', 'tokens_per_s', 'tokens/s',
      (x) => `${fmt.num(x, 0)} tokens/s`);
    scatter('MFU against memory headroom', 'mfu', 'MFU', (x) => fmt.pct(x));
    const top = fastest.slice(0, 8);
    const parts = [['compute', 'compute'], ['slowest GPU', 'slowest_gpu'],
      ['power cap', 'power_cap'], ['TP exposed', 'tp_exposed'], ['PP exposed', 'pp_exposed'],
      ['DP exposed', 'dp_exposed'], ['bubble', 'bubble'], ['optimizer', 'optimizer'],
      ['other', 'other']];
    const colour = [colours.compute, colours.slowest, colours.power, colours.tp, colours.pp, colours.dp,
      colours.bubble, colours.optimizer, colours.other];
    const c = section(`The ${top.length} fastest plans' breakdowns`, 'The critical stage of ' +
      'each plan, the most tokens a second on top' + (batches.size > 1
        ? ' (with another batch a step, not the shortest).' : '.'), true);
    chart(c, {
      legend: { bottom: 0 },
      tooltip: { trigger: 'axis', valueFormatter: (v) => `${fmt.seconds(v)} s` },
      grid: { left: 220, right: 30, top: 10, bottom: 60 },
      xAxis: { type: 'value', name: 's' },
      yAxis: { type: 'category', inverse: true, data: top.map(label) },
      series: parts.map(([name, key], i) => ({ name, type: 'bar', stack: 'step',
        itemStyle: { color: colour[i] }, data: top.map((v) => v.breakdown_s[key]) })),
    }, Math.max(240, 90 + 34 * top.length));
  }

  const all = section('Every variant', null, true);
  // A GPUs column after the variant's name where the sizes differ, as the text's table.
  const column = (cells, gpu) => (sized ? [cells[0], gpu, ...cells.slice(1)] : cells);
  table(all, column(['variant', 'step s', 'tokens/s', 'MFU', 'peak GiB', 'headroom GiB',
    'exposed comm s', 'Pareto', 'note'], 'GPUs'),
  d.variants.map((v) => column(v.feasible
    ? [label(v), fmt.seconds(v.step_time_s), fmt.num(v.tokens_per_s, 0), fmt.pct1(v.mfu),
      fmt.num(v.peak_memory_gib, 1), fmt.num(v.memory_headroom_gib, 1), fmt.seconds(v.exposed_comm_s),
      v.pareto ? 'yes' : '', '']
    : [label(v), '–', '–', '–', '–', '–', '–', '', v.reason],
  v.feasible ? fmt.num(v.plan.gpus, 0) : '–')), sized ? [1, 2, 3, 4, 5, 6, 7] : [1, 2, 3, 4, 5, 6]);
  megasim.done();
})();
