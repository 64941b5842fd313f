// The validate page: predicted against published for every row, one colour per source, on
// log axes so that seconds, MFU and TFLOP/s share one chart; each row's error; the ablation
// chains' gains; and the rows in a table.
'use strict';

(() => {
  const { data: d, esc, section, chart, keyValues, table, fmt } = megasim;
  // A row's source is its run id's first word, what leave-one-source-out leaves out (colours
  // group by it); the tables show its publication, up to the first comma.
  const short = (s) => {
    // Up to the first comma, and before a parenthesis the cut would leave open.
    let t = (s || 'unknown').split(',')[0];
    if (t.split('(').length > t.split(')').length) t = t.slice(0, t.lastIndexOf('(')).trim();
    return t.slice(0, 48);
  };
  // Four significant digits, as the text prints them (32, 104.7, 0.43), not four decimals.
  const sig = (x) => String(Number(x.toPrecision(4)));
  const context = (r) => r.role === 'context';
  const chain = (r) => r.step !== undefined;
  const err = (r) => (chain(r) ? `${fmt.signed((r.predicted - r.published) * 100)} pt`
    : fmt.signedPct(r.error)) + (context(r) ? ' (context: not scored)' : '');

  const card = section('Validation against published runs', null, true);
  // A statistic of no rows is null in the JSON: said to be none, not printed as 0.
  const over = (v, n, what) => (v === null ? `none over no ${what}` : `${fmt.pct(v)} over ${n} ${what}`);
  const rows = [['rows', d.rows.length],
    ['mean absolute error', `${over(d.mape, d.rows_checked, 'checked rows')}; ` +
      `${over(d.mape_fit_rows, d.rows_fitted, 'rows constants were fitted on')}`],
    ['largest ablation-chain difference', d.chain_max_error_points === null ? 'none (no chain row)'
      : `${fmt.num(d.chain_max_error_points, 1)} points`]];
  if (d.worst) rows.push(['worst row', `${d.worst.scenario} ${fmt.signedPct(d.worst.error)}`]);
  // What the text says beside the errors (the page left these out until 2026-12-05).
  const unscored = d.rows.filter(context).map((r) => r.scenario);
  if (unscored.length) {
    rows.push(['context rows (a published figure of unstated convention, shown, never scored)',
      unscored.join(', ')]);
  }
  if (d.families.length) {
    rows.push(['by system (fit and check rows)', d.families.map((f) =>
      `${f.family} ${fmt.pct(f.mape)} over ${f.rows}`).join('; ')]);
  }
  if (d.chain_max_gain_error_points !== null) {
    rows.push(['largest difference of a chain step\'s gain',
      `${fmt.num(d.chain_max_gain_error_points, 1)} points`]);
  }
  const coverage = (b) => (b.rows ? `${b.covered} of ${b.rows} rows inside theirs ` +
    `(${fmt.num(b.measurements_covered, 1)} of ${b.measurements} measurements, each counted ` +
    'once), median width ' +
    `${fmt.pct(b.median_width)} of the MFU, ${fmt.pct(b.median_step_width)} of the step time`
    : 'none drawn');
  rows.push(['error bands (each row\'s from the other sources\' rows)', coverage(d.band_coverage)]);
  const held = d.band_coverage_held_out;
  rows.push(['error bands held out (constants refitted without each source)',
    held.unavailable !== undefined ? `not drawn: ${held.unavailable}` : coverage(held)]);
  keyValues(card, rows);

  const sources = [...new Set(d.rows.map((r) => short(r.source)))].sort();
  const bySource = sources.map((s) => ({ s, rows: d.rows.filter((r) => short(r.source) === s) }));
  const values = d.rows.flatMap((r) => [r.published, r.predicted]);
  const lo = Math.min(...values) / 1.3;
  const hi = Math.max(...values) * 1.3;
  const scatter = section('Predicted against published', 'Every row, one colour per source, ' +
    'log axes. The published runs state no error bands; the dashed lines mark ±10 %.', true);
  const guide = (f, name) => ({ name, type: 'line', symbol: 'none', silent: true,
    lineStyle: { type: f === 1 ? 'solid' : 'dashed', color: '#888', width: 1 },
    data: [[lo, lo * f], [hi, hi * f]] });
  chart(scatter, {
    legend: { bottom: 0, type: 'scroll' },
    tooltip: { trigger: 'item', formatter: (p) => (p.data.row
      ? `${esc(p.data.row.scenario)}<br>${esc(p.data.row.metric)}` +
        `${chain(p.data.row) ? ` (step ${p.data.row.step})` : ''}<br>published ${p.value[0]}, ` +
        `predicted ${fmt.num(p.value[1], 4)} (${err(p.data.row)})` : esc(p.seriesName)) },
    grid: { left: 60, right: 30, top: 20, bottom: 80 },
    xAxis: { type: 'log', name: 'published', nameLocation: 'middle', nameGap: 25, min: lo, max: hi,
      axisLabel: { showMinLabel: false, showMaxLabel: false } },
    yAxis: { type: 'log', name: 'predicted', min: lo, max: hi,
      axisLabel: { showMinLabel: false, showMaxLabel: false } },
    series: [guide(1, 'equal'), guide(1.1, '+10 %'), guide(0.9, '−10 %'),
      ...bySource.map(({ s, rows: rs }) => ({ name: s, type: 'scatter', symbolSize: 9,
        data: rs.map((r) => ({ value: [r.published, r.predicted], row: r })) }))],
  }, 440);

  const errors = section('Error of every row', 'Relative error of plain rows (%); ablation-chain ' +
    'steps in MFU points. One colour per source.', true);
  chart(errors, {
    legend: { bottom: 0, type: 'scroll' },
    tooltip: { trigger: 'item', formatter: (p) => `${esc(p.name)}: ${esc(err(d.rows[p.dataIndex]))}` },
    grid: { left: 270, right: 30, top: 10, bottom: 60 },
    xAxis: { type: 'value', name: '% or pt' },
    yAxis: { type: 'category', inverse: true, data: d.rows.map((r) => r.scenario),
      axisLabel: { fontSize: 10 } },
    series: bySource.map(({ s }) => ({ name: s, type: 'bar', stack: 'error',
      data: d.rows.map((r) => (short(r.source) === s
        ? (chain(r) ? (r.predicted - r.published) * 100 : r.error * 100) : null)) })),
  }, Math.max(300, 80 + 16 * d.rows.length));

  if (d.chain_gains.length) {
    const gains = section('Ablation chains: each step\'s gain', 'Gain over the step before, in ' +
      'MFU points, published and predicted.', true);
    chart(gains, {
      legend: { bottom: 0 },
      tooltip: { trigger: 'axis', valueFormatter: (v) => `${fmt.num(v, 1)} pt` },
      grid: { left: 50, right: 20, top: 20, bottom: 60 },
      xAxis: { type: 'category', data: d.chain_gains.map((g) => `${g.run} step ${g.step}`) },
      yAxis: { type: 'value', name: 'pt' },
      series: [{ name: 'published', type: 'bar', data: d.chain_gains.map((g) => g.published * 100) },
        { name: 'predicted', type: 'bar', data: d.chain_gains.map((g) => g.predicted * 100) }],
    });
  }

  const all = section('Every row', null, true);
  table(all, ['scenario', 'metric', 'role', 'publication', 'published', 'predicted', 'error'],
    d.rows.map((r) => [r.scenario, chain(r) ? `${r.metric} (step ${r.step})` : r.metric, r.role,
      short(r.publication), sig(r.published), sig(r.predicted), err(r)]), [4, 5, 6]);
  if ((d.refused || []).length) {
    const refused = section('Refused published plans', 'Plans that ran as published but do not ' +
      'fit megasim\'s memory model: listed, never scored.', true);
    table(refused, ['scenario', 'metric', 'publication', 'published', 'why megasim refuses it'],
      d.refused.map((r) => [r.scenario, r.metric, short(r.publication), sig(r.published),
        r.reason]), [3]);
  }
  megasim.done();
})();
