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
    // 19.29 s); without, up to two. Thousands grouped with commas.
    num: (x, digits) => {
      if (x === null || x === undefined) return '–';
      let s = fixed(x, digits === undefined ? 2 : digits);
      if (digits === undefined && s.includes('.')) s = s.replace(/\.?0+$/, '');
      const [whole, frac] = s.split('.');
      const grouped = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
      return frac === undefined ? grouped : `${grouped}.${frac}`;
    },
    pct: (x, digits) => `${fixed(100 * x, digits)} %`,
    // As the text's seconds3 and one_decimal (reports/number_text.h): three decimals of a
    // second and one of a percent, and three or two significant digits below a hundredth of a
    // second or a twentieth of a percent (a tiny model's step read "0.000 s" and "0.0 %"
    // until 2026-12-07).
    // A figure the JSON lacks reads "–", as fmt.num's.
    seconds: (s) => (s === null || s === undefined ? '–'
      : Math.abs(s) >= 0.01 || s === 0 ? fmt.num(s, 3) : general(s, 3)),
    pct1: (x) => {
      if (x === null || x === undefined) return '–';
      const v = 100 * x;
      return `${Math.abs(v) >= 0.05 || v === 0 ? fixed(v, 1) : general(v, 2)} %`;
    },
    decimal1: (x) => (x === null || x === undefined ? '–'
      : Math.abs(x) >= 0.05 || x === 0 ? fmt.num(x, 1) : general(x, 2)),
    // Signed, as the text reports print errors: +1.2 %, +0.0 %, never -0.0 %.
    signedPct: (x, digits) => `${signed(100 * x, digits)} %`,
    signed: (x, digits) => signed(x, digits),
    // Failures a day as the text prints them: two decimals, or three digits below 0.1 ({:.3g}).
    rate: (x) => (x >= 0.1 || x === 0 ? fixed(x, 2) : general(x, 3)),
    // As fmt's {:g} (six significant digits), for a figure the text prints so.
    g: (x) => general(x, 6),
    // Power and energy in the unit that keeps their digits, as the text report prints them
    // (reports/run_report.cpp, power_text and thousandths_text): a one-node job draws kW.
    power: (mw) => (mw === 0 || mw >= 1 ? `${fixed(mw, 2)} MW`
      : mw >= 0.1 ? `${fixed(mw * 1e3, 0)} kW`
        : mw >= 1e-3 ? `${fixed(mw * 1e3, 1)} kW` : `${fixed(mw * 1e6, 0)} W`),
    energy: (mwh) => thousandths(mwh, 'MWh', 'kWh', 'Wh'),
    // CO2 as the text prints it: kg below a tonne (the page printed "0.0 t" until 2026-12-05).
    co2: (tonnes) => thousandths(tonnes, 't', 'kg', 'g'),
    // Days with their unit as the text prints them (reports/number_text.h, days_text): under
    // a hundredth of a day in minutes or seconds (the page read "0.00 days" until 2026-12-06).
    days: (days) => {
      if (days >= 0.01 || days === 0) return `${fixed(days, 2)} days`;
      const seconds = days * 86400;
      return seconds >= 60 ? `${fixed(seconds / 60, 1)} min`
        : seconds >= 0.1 ? `${fixed(seconds, 1)} s` : `${general(seconds, 2)} s`;
    },
  };
  // A quantity in `unit`, in its thousandths (`milli`) below 1 and in its millionths (`micro`)
  // below a thousandth (thousandths_text).
  function thousandths(v, unit, milli, micro) {
    return v >= 10 || v === 0 ? `${fixed(v, 0)} ${unit}`
      : v >= 1 ? `${fixed(v, 1)} ${unit}`
        : v >= 1e-2 ? `${fixed(v * 1e3, 0)} ${milli}`
          : v >= 0.9995e-3 ? `${fixed(v * 1e3, 2)} ${milli}` : `${general(v * 1e6, 3)} ${micro}`;
  }
  // Digits (an array of 0-9) rounded to their first `keep` as C's printf rounds the exact
  // value they expand: up past a half, to even on an exact half. `carry` when 9s roll over.
  function roundDigits(all, keep) {
    const kept = all.slice(0, keep);
    const tail = all.slice(keep);
    const up = tail.length > 0 && (tail[0] > 5 || (tail[0] === 5 &&
      (tail.slice(1).some((d) => d > 0) || (kept.length > 0 && kept[kept.length - 1] % 2 === 1))));
    let carry = false;
    if (up) {
      let i = kept.length - 1;
      while (i >= 0 && kept[i] === 9) { kept[i] = 0; i -= 1; }
      if (i < 0) { kept.unshift(1); carry = true; } else kept[i] += 1;
    }
    return { kept, carry };
  }
  // `x` with `digits` decimals as the text reports print it (fmt, C's printf): the double's
  // exact value, ties to even, no negative zero. toFixed rounds ties away from zero and
  // toLocaleString rounds the shortest decimal form, not the exact value (74.05, stored as
  // 74.04999..., read 74.1 there and 74.0 in the text; a mean of 8.25 restarts 8.3 and 8.2)
  // until 2026-12-06. toFixed's 30 places more are the exact expansion as far as any figure
  // here needs it; from 1e21 a double is a whole number, which BigInt writes out.
  function fixed(x, digits) {
    const d = digits === undefined ? 1 : digits;
    const v = Number(x);
    if (!Number.isFinite(v)) return String(v);
    const a = Math.abs(v);
    let whole;
    let frac;
    if (a >= 1e21) {
      whole = BigInt(a).toString();
      frac = '0'.repeat(d);
    } else {
      const s = a.toFixed(Math.min(100, d + 30));
      const point = s.indexOf('.');
      const all = (s.slice(0, point) + s.slice(point + 1)).split('').map(Number);
      const { kept } = roundDigits(all, point + d);
      const text = kept.join('');
      whole = text.slice(0, text.length - d).replace(/^0+(?=\d)/, '') || '0';
      frac = text.slice(text.length - d);
    }
    const body = d > 0 ? `${whole}.${frac}` : whole;
    return v < 0 && /[1-9]/.test(body) ? `-${body}` : body;
  }
  // `x` to `precision` significant digits as printf's %g writes it (fmt's {:.3g}): exact
  // value, ties to even, trailing zeros dropped, an exponent of two digits or more below 1e-4
  // or from 10^precision (toPrecision rounds ties away from zero and keeps the zeros: 0.0313
  // for 0.03125, 0.0500 for 0.05, 1.00e-7 for 1e-07, until 2026-12-06).
  function general(x, precision) {
    const v = Number(x);
    if (!Number.isFinite(v)) return String(v);
    if (v === 0) return '0';
    const [mantissa, power] = Math.abs(v).toExponential(Math.min(100, precision + 29)).split('e');
    const all = mantissa.replace('.', '').split('').map(Number);
    const { kept, carry } = roundDigits(all, precision);
    const e = Number(power) + (carry ? 1 : 0);
    const digits = kept.slice(0, precision);
    // Trailing zeros and a bare point go (100 for 99.995, not "100.").
    const strip = (t) => (t.includes('.') ? t.replace(/\.?0*$/, '') : t);
    let body;
    if (e < -4 || e >= precision) {
      const m = strip(`${digits[0]}.${digits.slice(1).join('')}`);
      body = `${m}e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`;
    } else if (e >= 0) {
      body = strip(`${digits.slice(0, e + 1).join('')}.${digits.slice(e + 1).join('')}`);
    } else {
      body = strip(`0.${'0'.repeat(-e - 1)}${digits.join('')}`);
    }
    return v < 0 ? `-${body}` : body;
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
