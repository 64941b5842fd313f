// Shared by every page of the megasim report: reads the embedded JSON object, lays out cards,
// draws ECharts charts (no animation, so a page is complete once its script has run) and
// formats numbers. Each page script calls megasim.done() after drawing its charts.
'use strict';

const megasim = (() => {
  const data = JSON.parse(document.getElementById('megasim-data').textContent);
  const root = document.getElementById('report');
  const charts = [];

  // Colours of the things every page names alike.
  const colours = {
    F: '#4e79a7', B: '#2c5582', W: '#86a8cf', optimizer: '#76b7b2', compute: '#4e79a7',
    slowest: '#edc948', power: '#b07aa1', tp: '#f28e2b', pp: '#e15759', dp: '#59a14f', bubble: '#bab0ac',
    other: '#9c755f', idle: '#d3cfcb',
  };

  // A user's text (scenario names, --vary values, metrics) as HTML text: ECharts puts a tooltip
  // formatter's string in the page as markup.
  function esc(text) {
    const entity = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
    return String(text).replace(/[&<>"']/g, (c) => entity[c]);
  }

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    for (const c of children) e.append(c instanceof Node ? c : String(c));
    return e;
  }

  // A card; `wide` spans both columns.
  function section(title, note, wide) {
    const card = el('section', { class: wide ? 'card wide' : 'card' }, el('h2', {}, title));
    if (note) card.append(el('p', { class: 'note' }, note));
    root.append(card);
    return card;
  }

  function chart(card, option, height) {
    const div = el('div', { class: 'chart' });
    div.style.height = `${height || 320}px`;
    card.append(div);
    const c = echarts.init(div, null, { renderer: 'canvas' });
    c.setOption(Object.assign({ animation: false, textStyle: { fontFamily: 'sans-serif' } },
      option));
    charts.push(c);
    return c;
  }

  // Rows of [label, value].
  function keyValues(card, rows) {
    const t = el('table', { class: 'kv' });
    for (const [k, v] of rows) t.append(el('tr', {}, el('th', {}, k), el('td', {}, v)));
    card.append(t);
  }

  // header: names; rows: arrays of cells; numeric: indices of right-aligned columns.
  function table(card, header, rows, numeric) {
    const num = new Set(numeric || []);
    const cls = (i) => (num.has(i) ? { class: 'num' } : {});
    const t = el('table', {}, el('tr', {}, ...header.map((h, i) => el('th', cls(i), h))));
    for (const r of rows) t.append(el('tr', {}, ...r.map((c, i) => el('td', cls(i), c))));
    card.append(el('div', { class: 'scroll' }, t));
  }

  const fmt = {
    // With `digits`, exactly that many decimals, as the text reports print them (19.290 s, not
    // 19.29 s); without, up to two.
    num: (x, digits) => (x === null || x === undefined ? '–'
      : halfEven(x, digits === undefined ? 2 : digits).toLocaleString('en-US',
        digits === undefined ? { maximumFractionDigits: 2 }
          : { minimumFractionDigits: digits, maximumFractionDigits: digits })),
    pct: (x, digits) => `${fixed(100 * x, digits)} %`,
    // Signed, as the text reports print errors: +1.2 %, +0.0 %, never -0.0 %.
    signedPct: (x, digits) => `${signed(100 * x, digits)} %`,
    signed: (x, digits) => signed(x, digits),
    // Failures a day as the text prints them: two decimals, or three digits below 0.1.
    rate: (x) => (x >= 0.1 || x === 0 ? fixed(x, 2) : Number(x).toPrecision(3)),
    // Power and energy in the unit that keeps their digits, as the text report prints them
    // (reports/run_report.cpp, power_text and thousandths_text): a one-node job draws kW.
    power: (mw) => (mw === 0 || mw >= 1 ? `${fixed(mw, 2)} MW`
      : mw >= 0.1 ? `${fixed(mw * 1e3, 0)} kW`
        : mw >= 1e-4 ? `${fixed(mw * 1e3, 1)} kW` : `${fixed(mw * 1e6, 0)} W`),
    energy: (mwh) => thousandths(mwh, 'MWh', 'kWh'),
    // CO2 as the text prints it: kg below a tonne (the page printed "0.0 t" until 2026-12-05).
    co2: (tonnes) => thousandths(tonnes, 't', 'kg'),
  };
  // A quantity in `unit`, or in its thousandths (`milli`) below 1 (thousandths_text).
  function thousandths(v, unit, milli) {
    return v >= 10 || v === 0 ? `${fixed(v, 0)} ${unit}`
      : v >= 1 ? `${fixed(v, 1)} ${unit}`
        : v >= 1e-2 ? `${fixed(v * 1e3, 0)} ${milli}` : `${fixed(v * 1e3, 2)} ${milli}`;
  }
  // `x` to `digits` decimals as the text reports round it (fmt, C's printf): an exact tie goes
  // to the even digit, where toFixed and toLocaleString take it away from zero (a mean of 8.25
  // restarts read 8.3 here and 8.2 in the text until 2026-12-06). An exact tie is a double whose
  // decimal expansion ends in 5 at the next digit, which 30 digits more resolve for any figure
  // a report prints.
  function halfEven(x, digits) {
    const v = Number(x);
    if (!Number.isFinite(v) || Math.abs(v) >= 1e21) return v;
    const s = Math.abs(v).toFixed(Math.min(100, digits + 30));
    const point = s.indexOf('.');
    const tail = s.slice(point + 1 + digits);
    if (!/^50*$/.test(tail)) return v;  // no tie: toFixed's nearest is fmt's
    const kept = digits === 0 ? s.slice(0, point) : s.slice(0, point + 1 + digits);
    const odd = Number(kept[kept.length - 1]) % 2 === 1;
    const down = Number(kept);
    const rounded = odd ? Number((down + 10 ** -digits).toFixed(digits)) : down;
    return v < 0 ? -rounded : rounded;
  }
  // toFixed without a negative zero, ties to even as the text's.
  function fixed(x, digits) {
    const d = digits === undefined ? 1 : digits;
    const s = halfEven(x, d).toFixed(d);
    return Number(s) === 0 ? s.replace('-', '') : s;
  }
  function signed(x, digits) {
    const s = fixed(x, digits);
    return s.startsWith('-') ? s : `+${s}`;
  }

  // Bins of `values` for a histogram: [[centre, count], ...] and the bin width. Values that
  // differ: run.js says a single value in words instead.
  function histogram(values) {
    const lo = Math.min(...values);
    const hi = Math.max(...values);
    const bins = Math.max(1, Math.min(30, Math.ceil(Math.sqrt(values.length))));
    const width = (hi - lo) / bins;
    const counts = new Array(bins).fill(0);
    for (const v of values) counts[Math.min(bins - 1, Math.floor((v - lo) / width))] += 1;
    return { width, bins: counts.map((n, i) => [lo + (i + 0.5) * width, n]) };
  }

  window.addEventListener('resize', () => charts.forEach((c) => c.resize()));
  document.getElementById('echarts-version').textContent = echarts.version;

  function done() {
    document.body.dataset.charts = String(charts.length);
    document.body.dataset.rendered = 'true';
  }

  return { data, colours, esc, el, section, chart, keyValues, table, fmt, histogram, done };
})();
