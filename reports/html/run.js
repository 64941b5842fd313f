// The simulate page's run section: IT and facility power over one step and over the run, the
// Monte Carlo trials' wall-clock days and goodput, interruptions by cause, and the checkpoint
// interval sweep.
'use strict';

function megasimRun(d, section, chart, colours, fmt, histogram, keyValues) {
  const run = d.run;
  const power = d.power;
  const spreadOf = (dist, f) => (dist.p10 === dist.p90 ? f(dist.mean)
    : `${f(dist.mean)} mean (p10 ${f(dist.p10)}, p90 ${f(dist.p90)})`);

  // The unbroken run of swept intervals the trials cannot tell from the best, as the text's
  // checkpoint line gives it (left to the text until 2026-12-05).
  const alikeRange = () => {
    const pts = run.interval_sweep;
    let first = pts.findIndex((p) => p.interval_min === run.best_interval_min);
    if (first < 0 || run.best_interval_min === null) return '';
    let last = first;
    while (first > 0 && pts[first - 1].alike_best) first -= 1;
    while (last + 1 < pts.length && pts[last + 1].alike_best) last += 1;
    return last > first ? ` (${fmt.num(pts[first].interval_min, 1)}–` +
      `${fmt.num(pts[last].interval_min, 1)} min alike within the trials' noise)` : '';
  };
  // Cents below ten dollars (a small job's energy printed "$0").
  const dollars = (x) => fmt.num(x, x < 10 ? 2 : 0);
  // The trials' mean downtime a restart where it exceeds the model's, and what of it waited for
  // a spare, as the text's per-restart line says (the page left it out until 2026-12-05).
  const trialsRecovery = () => {
    if (!(run.restarts.mean > 0) || !(power.spare_nodes_reserved > 0)) return '';
    const mean = 60 * run.down_hours / run.restarts.mean;
    const wait = 60 * run.spare_wait_hours / run.restarts.mean;
    if (!(mean > 1.05 * run.recovery_min)) return '';
    return `; ${fmt.num(mean, 1)} min on average in the trials` +
      (wait >= 0.05 ? `, ${fmt.num(wait, 1)} of it waiting for spares`
        : ' (the failures they drew that need a node)');
  };

  // The run's and the power's figures in words, as the text report states them (the page drew
  // their charts and left the figures out until 2026-12-05).
  (() => {
    const card = section('Run: failures, checkpoints and power', null, true);
    const interval = (v) => (v === null ? 'none' : `${fmt.num(v, 1)} min`);
    keyValues(card, [
      // The reliability preset and what its failure rates were multiplied by, as the text's
      // first run line (the page named neither until 2026-12-07).
      ['reliability', `preset ${run.reliability_preset}` +
        (run.failure_rate_scale !== 1 ? `, its failure rates × ${fmt.g(run.failure_rate_scale)}` : '') +
        `; ${run.trials} trial${run.trials === 1 ? '' : 's'}`],
      // The steps and their failure-free time, as the text's "steps" line (left off the page
      // until 2026-12-05).
      ['steps', `${run.steps} at ${fmt.num(run.step_time_s, 3)} s; ` +
        `${fmt.days(run.failure_free_days)} of steps` +
        (run.evaluation_hours > 0 ? ' and evaluations' : '') +
        ' alone (no failure, checkpoint or launch)'],
      ['goodput', spreadOf(run.goodput, (x) => fmt.pct(x))],
      // One trial's restarts are a count, as the text prints them ("16.0" until 2026-12-07).
      ['restarts', `${spreadOf(run.restarts, (x) => fmt.num(x, run.trials === 1 ? 0 : 1))}; ` +
        `${fmt.rate(run.failures_per_day)} failures a day, MTBF ` +
        // No failure: the text's words (the page printed "– h" until 2026-12-06).
        (run.mtbf_hours === null ? 'none (no failures)' : `${fmt.num(run.mtbf_hours, 2)} h`)],
      // No failure, no restart, as the text says (the page read "0.0 min with a spare free"
      // under the none preset until 2026-12-06).
      // Without spares the figure is the wait for the node's repair (the page said "with a
      // spare free" of it until 2026-12-06, a user's trial).
      ['per restart', !(run.failures_per_day > 0) ? 'none (no failures)'
        : `${fmt.num(run.recovery_min, 1)} min` +
        (power.spare_nodes_reserved > 0 ? ' with a spare free' : '') + ' (communicator ' +
        `initialisation ${fmt.num(run.comm_init_s, 0)} s)` +
        (power.spare_nodes_reserved > 0 ? trialsRecovery()
          : ', the failed node\'s repair waited for: no spares')],
      // Planned stops, as the text's line (none where the preset counts none).
      ...(run.planned_stops_per_day > 0 ? [['planned stops', (run.trials === 1
        ? fmt.num(run.planned_stops.mean, 0) : spreadOf(run.planned_stops, (x) => fmt.num(x, 1))) +
        `; ${fmt.rate(run.planned_stops_per_day)} a day of running, ` +
        `${fmt.num(run.planned_stop_min, 1)} min each (the save waited for, relaunch, comm ` +
        `init, load), ${fmt.num(run.planned_hours, 1)} h in all`]] : []),
      // Its parts and the stragglers' lines, as the text gives them (the page had the total
      // alone until 2026-12-06).
      ['lost GPU-hours', `${fmt.num(run.lost_gpu_hours, 0)} (of the job's wall-clock: launch ` +
        `${fmt.num(run.launch_hours, 2)} h, rework ${fmt.num(run.rework_hours, 1)} h, down ` +
        `${fmt.num(run.down_hours, 1)} h, ` +
        (run.planned_stops_per_day > 0 ? `planned stops ${fmt.num(run.planned_hours, 1)} h, ` : '') +
        `checkpoints ${fmt.num(run.checkpoint_hours, 1)} h` +
        (run.straggler_hours > 0 ? `, stragglers ${fmt.num(run.straggler_hours, 1)} h` : '') +
        ')'],
      ...(run.stragglers_in_step ? [['stragglers', 'the scenario\'s slow hosts (stragglers) ' +
        'pace every simulated step; the preset\'s straggler draw is off']] : []),
      ...(run.evict_stragglers && run.straggler_slowed_share > 0 ? [['stragglers',
        `not evicted in ${fmt.num(100 * run.straggler_slowed_share, 0)}% of the trials: more ` +
        'found than the spare pool holds (reliability.spare_nodes), or a wait for spares ' +
        'expected while their nodes are in repair longer than their slowdown of the run, so ' +
        'they slow every step']] : []),
      // A synchronous checkpoint has no background write, a run without checkpoints no
      // interval (the page printed "– min" for them until 2026-12-05; the text leaves them out).
      ['checkpoint', run.checkpoint_interval_min === null ? 'none'
        : `every ${fmt.num(run.checkpoint_interval_min, 1)} min` +
          (run.checkpoints_in_run === false ? ' (none within the run)' : '') + ', ' +
          `${fmt.num(run.checkpoint_blocking_s, 1)} s blocking` +
          (run.checkpoint_async_write_min === null ? ''
            : `, ${fmt.num(run.checkpoint_async_write_min, 1)} min written in the background`) +
          // The wait the blocking figure leaves out, as the text says it (left off the page
          // until 2026-12-06: "5.0 s blocking" beside 280 h of checkpoint stalls).
          (run.checkpoint_async_write_min !== null &&
            run.checkpoint_interval_min < run.checkpoint_async_write_min
            ? ', longer than the interval: each checkpoint also waits about ' +
              `${fmt.num(60 * (run.checkpoint_async_write_min - run.checkpoint_interval_min), 0)}` +
              ' s for the last write' : '')],
      ['checkpoint interval: Young / Daly / best simulated',
        `${interval(run.young_interval_min)} / ${interval(run.daly_interval_min)} / ` +
        (run.best_interval_past_run ? 'no checkpoint within the run'
          : `${interval(run.best_interval_min)}${alikeRange()}`) +
        // As the text says them (the page left them out until 2026-12-05).
        (run.best_interval_at_sweep_edge ? ' (at the sweep\'s edge: a shorter or longer one ' +
          'may be better)' : '') +
        (run.interval_sweep_unfinished > 0 ? `; ${run.interval_sweep_unfinished} swept ` +
          `interval${run.interval_sweep_unfinished === 1 ? '' : 's'} cannot finish` : '')],
      ['power', `IT ${fmt.power(power.it_average_mw)} and facility ` +
        `${fmt.power(power.facility_average_step_mw)} on average in steps; ` +
        `IT peak ${fmt.power(power.it_peak_mw)}, facility peak ` +
        `${fmt.power(power.facility_peak_mw)}` +
        // No spare, no clause, as the text leaves it out (the page said "with every spare
        // idle" of none until the review of 2026-12-06).
        (power.spare_nodes_reserved > 0 && power.spare_nodes_billed > 0
          ? ` (${fmt.power(power.facility_peak_with_spares_mw)} with ` +
            `${power.spare_nodes_billed < power.spare_nodes_reserved ? 'its share of the spares'
              : 'every spare'} idle)` : '') + `, swing ${fmt.power(power.swing_mw)} within a step` +
        (run.failures_per_day > 0 ? `, ${fmt.power(power.failure_drop_mw)} dropped on a failure`
          : run.planned_stops_per_day > 0
            ? `, ${fmt.power(power.failure_drop_mw)} dropped on a planned stop` : '')],
      ['energy, CO2 and cost', `${fmt.energy(power.it_mwh)} IT, ` +
        `${fmt.energy(power.facility_mwh)} facility; ${fmt.co2(power.tonnes_co2)} CO2` +
        (power.usd_gpu_hours === undefined ? ''
          : `; $${dollars(power.usd_gpu_hours)} of GPU-hours`) +
        (power.usd_energy === undefined ? '' : `; $${dollars(power.usd_energy)} in energy`)],
    ]);
  })();
  // The charts' unit: kW for a job that draws under a megawatt at its peak (a one-node job's
  // "0.00 MW" reads as nothing drawn).
  const kw = power.it_peak_mw * power.pue < 1;
  const unit = kw ? 'kW' : 'MW';
  const scaled = (mw) => (kw ? mw * 1e3 : mw);
  // A charted value's tooltip as the text prints the power (watts under a kilowatt: a two-GPU
  // job's "0.8 kW" until 2026-12-06).
  const tip = (v) => fmt.power(kw ? v / 1e3 : v);

  // Power over one step: each activity's share of the step at the job's power in it.
  (() => {
    const card = section('IT and facility power over one step',
      'A GPU\'s activities laid end to end for one step (the simulator times how long each ' +
      'lasts, not their order), at the whole job\'s power in each.');
    const it = [];
    const facility = [];
    let t = 0;
    for (const a of power.by_activity) {
      if (a.step_s <= 0) continue;
      it.push([t, scaled(a.it_mw)], [t + a.step_s, scaled(a.it_mw)]);
      facility.push([t, scaled(a.facility_mw)], [t + a.step_s, scaled(a.facility_mw)]);
      t += a.step_s;
    }
    chart(card, {
      legend: { bottom: 0 },
      tooltip: { trigger: 'axis', formatter: (ps) => `${fmt.num(ps[0].value[0], 2)} s into the ` +
        'step' + ps.map((p) => `<br>${p.marker}${p.seriesName} ` +
        `${tip(p.value[1])}`).join('') },
      grid: { left: 50, right: 20, top: 30, bottom: 60 },
      xAxis: { type: 'value', name: 's', max: t },
      yAxis: { type: 'value', name: unit },
      series: [
        { name: 'IT', type: 'line', showSymbol: false, data: it, areaStyle: { opacity: 0.15 },
          markLine: { symbol: 'none', label: { formatter: 'IT average', position: 'insideEndTop' },
            data: [{ yAxis: scaled(power.it_average_mw) }] } },
        { name: `facility (PUE ${power.pue})`, type: 'line', showSymbol: false, data: facility },
      ],
    });
  })();

  // Power over the run: the step's levels, idle while down, and the run's average.
  (() => {
    // A small job billed a share of its one spare pays that share of its idle power.
    const share = power.spare_nodes_billed < power.spare_nodes_reserved;
    const card = section('Power over the run',
      `Facility average over the whole run (downtime at idle power included` +
      // No spare, no clause, as the text leaves it out ("0.0 idle spare nodes" until
      // 2026-12-06).
      (power.spare_nodes_powered > 0 ? `, and ${fmt.num(power.spare_nodes_powered, 1)} idle ` +
        `spare nodes, ${fmt.power(power.spare_it_mw)} IT` +
        `${share ? ' of it the job\'s share' : ''}` : '') + '): ' +
      `${fmt.power(power.facility_average_run_mw)}; ${fmt.energy(power.facility_mwh)}.`);
    const levels = [['step peak', power.it_peak_mw], ['step average', power.it_average_mw],
      ['step trough', power.it_trough_mw], ['idle (down)', power.it_idle_mw],
      ['run average', power.facility_average_run_mw / power.pue]];
    chart(card, {
      legend: { bottom: 0 },
      tooltip: { trigger: 'axis', valueFormatter: (v) => tip(v) },
      grid: { left: 50, right: 20, top: 20, bottom: 60 },
      xAxis: { type: 'category', data: levels.map((l) => l[0]), axisLabel: { interval: 0 } },
      yAxis: { type: 'value', name: unit },
      series: [{ name: 'IT', type: 'bar', data: levels.map((l) => scaled(l[1])) },
        { name: 'facility', type: 'bar', data: levels.map((l) => scaled(l[1] * power.pue)) }],
    });
  })();

  // The Monte Carlo trials.
  const spread = (title, values, marks, unit, format) => {
    // One trial, or trials all alike, have no spread to draw: the value, said in words.
    if (Math.min(...values) === Math.max(...values)) {
      const n = values.length === 1 ? 'The one Monte Carlo trial' : `All ${values.length} trials`;
      section(title, `${n}: ${format(values[0])}${unit ? ` ${unit}` : ''} (run.trials sets ` +
        'how many are drawn).');
      return;
    }
    const card = section(title, `${run.trials} Monte Carlo trials; lines at p10, p50 and p90.`);
    const h = histogram(values);
    chart(card, {
      tooltip: { trigger: 'axis', formatter: (ps) => `${format(ps[0].value[0])}` +
        `${unit ? ` ${unit}` : ''}: ${ps[0].value[1]} trial${ps[0].value[1] === 1 ? '' : 's'}` },
      grid: { left: 50, right: 20, top: 30, bottom: 40 },
      xAxis: { type: 'value', name: unit, scale: true,
        axisLabel: { formatter: (v) => format(v) } },
      yAxis: { type: 'value', name: 'trials', minInterval: 1 },
      series: [{ type: 'bar', barWidth: '90%', data: h.bins, itemStyle: { color: colours.compute },
        markLine: { symbol: 'none', lineStyle: { color: '#c0392b' },
          data: marks.map(([n, v]) => ({ xAxis: v, label: { formatter: n } })) } }],
    });
  };
  const q = (dist) => [['p10', dist.p10], ['p50', dist.p50], ['p90', dist.p90]];
  spread('Wall-clock time', run.trial_days, q(run.days), '', (v) => fmt.days(v));
  spread('Goodput (effective training time)', run.trial_goodput, q(run.goodput), '',
    (v) => fmt.pct(v));

  // Interruptions by cause.
  (() => {
    const causes = Object.entries(run.interruptions_by_cause).sort((a, b) => b[1] - a[1]);
    // One trial's counts are that trial's draw, not a mean (as the text says since 2026-12-05).
    const per = run.trials === 1 ? 'Counts of the one trial drawn' : 'Mean per trial';
    const card = section('Interruptions by cause',
      `${per}; ${fmt.num(run.restarts.mean, run.trials === 1 ? 0 : 1)} ` +
      `restarts, ${fmt.rate(run.failures_per_day)} failures a day.`);
    // None drawn: said in words, not an empty axis (until 2026-12-06).
    if (!causes.some((c) => c[1] > 0)) {
      card.append(megasim.el('p', { class: 'note' }, run.failures_per_day > 0
        ? 'No interruption was drawn in the run.' : 'No failures: the reliability preset has none.'));
      return;
    }
    chart(card, {
      tooltip: { trigger: 'axis', valueFormatter: (v) => fmt.num(v, 2) },
      grid: { left: 190, right: 30, top: 10, bottom: 30 },
      xAxis: { type: 'value' },
      yAxis: { type: 'category', inverse: true, data: causes.map((c) => c[0]) },
      series: [{ type: 'bar', data: causes.map((c) => c[1]), itemStyle: { color: colours.pp } }],
    }, Math.max(220, 40 + 22 * causes.length));
  })();

  // The checkpoint interval sweep.
  (() => {
    const card = section('Checkpoint interval against goodput',
      'Mean wall-clock days of the swept intervals and the goodput they give (their trials\' ' +
      'mean, as the headline\'s); Young\'s and Daly\'s intervals and the best simulated one marked.');
    if (!run.interval_sweep.length) {
      card.append(megasim.el('p', { class: 'note' }, 'No interval sweep in the data.'));
      return;
    }
    const pts = run.interval_sweep;
    const marks = [['Young', run.young_interval_min], ['Daly', run.daly_interval_min],
      ['best', run.best_interval_min], ['chosen', run.checkpoint_interval_min]]
      .filter(([, v]) => v !== null).sort((a, b) => a[1] - b[1]);
    // Marks within 3 % of the swept range of each other share one label (on the first line),
    // so that "best" and "chosen" at one interval do not print over each other.
    const xs = pts.map((p) => p.interval_min);
    const near = 0.03 * (Math.max(...xs, ...marks.map((m) => m[1])) -
      Math.min(...xs, ...marks.map((m) => m[1])));
    const labels = marks.map(() => null);
    for (let i = 0, first = 0; i < marks.length; i++) {
      if (i > 0 && marks[i][1] - marks[first][1] <= near) {
        labels[first] = `${labels[first]}, ${marks[i][0]}`;
      } else {
        first = i;
        labels[i] = marks[i][0];
      }
    }
    // The axis spans the marks too: a chosen interval past the swept ones was cut off.
    const lo = Math.min(...xs, ...marks.map((m) => m[1]));
    const hi = Math.max(...xs, ...marks.map((m) => m[1]));
    const pad = 0.02 * (hi - lo);
    chart(card, {
      legend: { bottom: 0 },
      tooltip: { trigger: 'axis', formatter: (ps) => `every ${fmt.num(ps[0].value[0], 1)} min` +
        ps.map((p) => `<br>${p.seriesName} ${p.seriesName === 'goodput' ? fmt.pct(p.value[1])
          : fmt.num(p.value[1], 2)}`).join('') },
      grid: { left: 55, right: 55, top: 30, bottom: 60 },
      xAxis: { type: 'value', name: 'min', scale: true, min: lo - pad, max: hi + pad,
        axisLabel: { formatter: (v) => fmt.num(v, 1), showMinLabel: false, showMaxLabel: false } },
      yAxis: [{ type: 'value', name: 'days', scale: true },
        { type: 'value', name: 'goodput', scale: true, axisLabel: { formatter: (v) => fmt.pct(v) } }],
      series: [
        { name: 'mean days', type: 'line', data: pts.map((p) => [p.interval_min, p.mean_days]),
          markLine: { symbol: 'none', lineStyle: { type: 'dashed' },
            // Each label along its line, so that labels of nearby lines do not run together.
            data: marks.map(([, v], i) => ({ xAxis: v,
              label: labels[i] === null ? { show: false }
                : { formatter: labels[i], position: 'insideEndTop' } })) } },
        { name: 'goodput', type: 'line', yAxisIndex: 1,
          data: pts.map((p) => [p.interval_min, p.mean_goodput]) },
      ],
    });
  })();
}
