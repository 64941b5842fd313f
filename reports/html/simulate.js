// The simulate page: the scenario, the step (timeline per pipeline stage, breakdown of the
// critical stage, memory against the device), and when the scenario has a run: power, the
// Monte Carlo trials, failures by cause and the checkpoint interval sweep.
'use strict';

(() => {
  const { data: d, colours, section, chart, keyValues, fmt, histogram } = megasim;

  // What of the plan sets its memory and its recompute, as the text's plan line says it (on
  // neither until 2026-12-07, a consistency trial).
  const memoryPlan = (p) => {
    const parts = [];
    if (p.recompute !== 'none') parts.push(`${p.recompute} recompute`);
    if (p.tp > 1 && p.sequence_parallel) parts.push('SP');
    if (p.zero3) {
      parts.push(p.shard_group > 0 && p.shard_group < p.dp
        ? `ZeRO-3 sharded over ${p.shard_group} of DP ${p.dp}` : 'ZeRO-3');
    } else if (p.zero2) {
      parts.push('ZeRO-2');
    } else if (p.distributed_optimizer) {
      parts.push('distributed optimizer');
    }
    return parts.length ? `; ${parts.join(', ')}` : '';
  };

  function summary() {
    const p = d.plan;
    const card = section('Scenario', null, false);
    const rows = [
      ['scenario', d.scenario], ['model', d.model], ['cluster', d.cluster],
      ['device', `${d.device.name} (${d.device.kind}), ${fmt.num(d.device.memory_gib, 1)} GiB`],
      ['plan', `TP ${p.tp}${p.cp > 1 ? ` × CP ${p.cp}` : ''} × PP ${p.pp} × DP ${p.dp} = ` +
        `${fmt.num(p.gpus, 0)} GPUs, VPP ${p.vpp}, ${p.micro_batches_per_replica} ` +
        `micro-batch${p.micro_batches_per_replica === 1 ? '' : 'es'} of ` +
        // FP8 GEMMs said, as the text says them (left off the page until 2026-12-06: its MFU
        // is counted against the 16-bit peak).
        `${p.micro_batch}, global batch ${p.global_batch}${p.fp8 ? ', FP8 GEMMs' : ''}, ` +
        `ranks ${p.rank_order}${memoryPlan(p)}`],
      ['system', d.system.line],
      // The scenario's slow hosts, as the text's line (said nowhere until 2026-12-06).
      ...(d.stragglers ? [['stragglers', `${d.stragglers.hosts_slowed} of the job's ` +
        `${d.stragglers.hosts} hosts ${d.stragglers.slowdown}× slower in ` +
        `${d.stragglers.passes === 'all' ? 'all passes' : 'forward passes'} ` +
        `(stragglers.seed ${d.stragglers.seed})`]] : []),
      ['step time', `${fmt.seconds(d.step_time_s)} s`],
      ['MFU / HFU', `${fmt.pct1(d.mfu)} / ${fmt.pct1(d.hfu)}` +
        (p.fp8 ? ' of the 16-bit peak (FP8 GEMMs)' : '')],
      ['tokens/s', fmt.num(d.tokens_per_s, 0)],
      ['TFLOP/s per GPU', `${fmt.decimal1(d.tflops_per_gpu_model)} model, ` +
        `${fmt.decimal1(d.tflops_per_gpu_hw)} hardware`],
      ['costs', `${d.costs.source} kernel models, ${fmt.pct(d.costs.measured_share, 0)} of ` +
        `compute time and ${fmt.pct(d.costs.collective_measured_share, 0)} of collective time ` +
        'from measurements'],
      ['simulated', `${d.simulation.mode}, ${d.simulation.ranks_simulated} ` +
        `rank${d.simulation.ranks_simulated === 1 ? '' : 's'}, ` +
        `${fmt.num(d.simulation.events, 0)} events, on the ${d.simulation.network} network`],
    ];
    if (d.step_time_interval_s !== undefined) rows.splice(9, 0, ['error band',
      `step ${fmt.seconds(d.step_time_interval_s[0])}–${fmt.seconds(d.step_time_interval_s[1])} s, ` +
      `MFU ${fmt.pct1(d.mfu_interval[0])}–${fmt.pct1(d.mfu_interval[1])} ` +
      `(${d.interval_basis.rule}: ${d.interval_basis.scenarios.length} validation rows` +
      // What the basis does not share with the prediction, and every row of it off the same
      // way: the text report's clauses, from the JSON.
      (d.interval_basis.caveats || []).map((c) => `; ${c}`).join('') +
      (d.interval_basis.one_sided !== undefined ? `; ${d.interval_basis.one_sided}` : '') + ')']);
    else if (d.interval_none !== undefined) rows.splice(9, 0, ['error band', `none: ${d.interval_none}`]);
    if (d.days_for_tokens !== undefined) rows.push(['time for the tokens (the steps alone: no failure, checkpoint or launch)',
      fmt.days(d.days_for_tokens)]);
    if (d.run && d.run.trials === 1) rows.push(['wall-clock (one trial: one draw of the failures)',
      fmt.days(d.run.days.p50)]);
    // The mean too, as the text gives it: the energy and any cost are counted from it.
    else if (d.run) rows.push(['wall-clock p10 / p50 / p90',
      `${fmt.days(d.run.days.p10)} / ${fmt.days(d.run.days.p50)} / ${fmt.days(d.run.days.p90)}` +
      `, mean ${fmt.days(d.run.days.mean)} (energy and any cost are counted from the mean)`]);
    if (d.run) {
      // What takes the running time the steps leave, as the text report names it: checkpoint
      // stalls only where the run has some (the page named them always until 2026-12-06).
      // Evaluations the run reaches, as the text says (an interval past the run has none: the
      // page named evaluation there until 2026-12-06).
      const evaluating = d.run.evaluation_hours > 0;
      const rest = [...(evaluating ? ['evaluation'] : []),
        ...(d.run.checkpoint_hours > 0 ? ['checkpoint stalls'] : []),
        ...(d.run.straggler_slowed_share > 0 ? ['stragglers'] : [])];
      const named = rest.length > 1
        ? `${rest.slice(0, -1).join(', ')} and ${rest[rest.length - 1]}` : rest[0];
      rows.push(['MFU of the running job', fmt.pct(d.run.running_mfu) +
        (rest.length ? ` (${named} take${rest.length === 1 && evaluating ? 's' : ''} the rest ` +
          'of the running time)' : ' (the steps take all of the running time)')]);
    }
    if (d.run && d.run.evaluation_hours > 0) rows.push(['evaluation',
      `${fmt.num(d.run.evaluation_s, 1)} s every ${d.run.evaluation_interval_steps} steps, ` +
      `${fmt.num(d.run.evaluation_hours, 1)} h in all, ` +
      // Its share, as the text gives it (left to the text until 2026-12-05).
      `${fmt.num(100 * d.run.evaluation_hours / (24 * d.run.failure_free_days), 1)}% of the ` +
      'steps\' and evaluations\' time']);
    keyValues(card, rows);
  }

  function breakdown() {
    const b = d.breakdown_s;
    const parts = [['compute', b.compute, colours.compute],
      ['slowest GPU', b.slowest_gpu, colours.slowest], ['power cap', b.power_cap, colours.power],
      ['TP exposed', b.tp_exposed, colours.tp],
      ['PP exposed', b.pp_exposed, colours.pp], ['DP exposed', b.dp_exposed, colours.dp],
      ['bubble', b.bubble, colours.bubble], ['optimizer', b.optimizer, colours.optimizer],
      ['other', b.other, colours.other]];
    // The text's two notes under its breakdown (left off the page until 2026-12-05).
    const notes = [
      ...(d.dp_hidden_s > 0 ? [`${fmt.num(d.dp_hidden_s, 3)} s of ZeRO-3/FSDP collectives, ` +
        'their host work and reduce-buffer work overlapped: beside compute, or beside each ' +
        'other.'] : []),
      ...(d.pipe_engine_s > 0 ? [`${fmt.num(d.pipe_engine_s, 3)} s of compute and TP exposed ` +
        'is the pipeline engine\'s own work.'] : [])];
    const card = section(`Breakdown of the critical stage (stage ${d.critical_stage})`,
      [`Where the ${fmt.seconds(d.step_time_s)} s step goes on the stage that finishes last.`,
        ...notes].join(' '));
    chart(card, {
      grid: { left: 100, right: 70, top: 10, bottom: 30 },
      tooltip: { trigger: 'item', valueFormatter: (v) => `${fmt.seconds(v)} s` },
      xAxis: { type: 'value', name: 's' },
      yAxis: { type: 'category', inverse: true, data: parts.map((x) => x[0]) },
      series: [{ type: 'bar', data: parts.map(([, v, c]) => ({ value: v, itemStyle: { color: c } })),
        label: { show: true, position: 'right',
          formatter: (x) => fmt.pct(x.value / d.step_time_s) } }],
    });
  }

  function memory() {
    const m = d.memory_per_stage;
    // The optimizer step's fp32 gradient copy takes the passes' place once they are freed: the
    // peak is the larger, so the bar carries what it adds beyond them (none drawn until
    // 2026-12-07, a bar short of the total where the copy was the larger).
    const beyond = (s) => Math.max(0, s.main_gradient_at_step_gib - s.activations_gib -
      s.embedding_logits_gib);
    const parts = [['weights', 'weights_gib'], ['gradients', 'gradients_gib'],
      ['optimizer states', 'optimizer_states_gib'], ['activations', 'activations_gib'],
      ['embedding and logits', 'embedding_logits_gib'],
      ["optimizer step's fp32 gradient, beyond the passes'", beyond],
      ['workspace', 'workspace_gib']];
    const tight = m.filter((s) => s.tight).map((s) => s.stage);
    const note = tight.length === 0 ? '' : ` Tight: stage${tight.length > 1 ? 's' : ''} ` +
      `${tight.join(', ')} pass the line only with the fragmentation margin (part of the ` +
      'workspace bar) and run if the allocator loses less than the room left without it.';
    const over = m.filter((s) => s.over_device);
    // The most over stage's need, as the text's "over" line gives it (the page named the
    // stages without a figure until 2026-12-05).
    const needs = (s) => s.total_gib - s.fragmentation_margin_gib;
    const worst = over.reduce((a, s) => (a === null || needs(s) > needs(a) ? s : a), null);
    const overNote = over.length === 0 ? '' : ` Over: stage${over.length > 1 ? 's' : ''} ` +
      `${over.map((s) => s.stage).join(', ')} exceed the device even without the margin ` +
      `(stage ${worst.stage} needs ${fmt.num(needs(worst), 1)} of its ` +
      `${fmt.num(d.device.memory_gib, 1)} GiB); the published run ran ` +
      'a plan that needs as much, so the memory model overstates it (validation.allow_oom).';
    const card = section('Memory per GPU by pipeline stage',
      `Against the device's ${fmt.num(d.device.memory_gib, 1)} GiB (dashed line).${note}${overNote}`);
    chart(card, {
      legend: { bottom: 0 },
      grid: { left: 50, right: 20, top: 20, bottom: 60 },
      tooltip: { trigger: 'axis', formatter: (ps) => `stage ${ps[0].name}` + ps.map((p) =>
        `<br>${p.marker}${p.seriesName} ${fmt.num(p.value, 2)} GiB`).join('') },
      xAxis: { type: 'category', name: 'stage', data: m.map((s) => s.stage) },
      yAxis: { type: 'value', name: 'GiB',
        // A round top, so the axis's last label does not sit on the one below it.
        max: 10 * Math.ceil(Math.max(d.device.memory_gib * 1.05, ...m.map((s) => s.total_gib)) / 10) },
      series: parts.map(([name, key], i) => ({
        name, type: 'bar', stack: 'memory',
        data: m.map((s) => (typeof key === 'function' ? key(s) : s[key])),
        markLine: i ? undefined : { symbol: 'none', lineStyle: { type: 'dashed', color: '#c0392b' },
          label: { formatter: 'device capacity', position: 'insideEndTop' }, data: [{ yAxis: d.device.memory_gib }] },
      })),
    });
  }

  if (typeof megasimTimeline === 'undefined') throw new Error('timeline.js was not loaded');
  summary();
  megasimTimeline(d, section, chart, colours, fmt);
  breakdown();
  memory();
  if (d.run) {
    megasimRun(d, section, chart, colours, fmt, histogram, keyValues);
  } else {
    section('Run, power and failures', 'The scenario sets no run.tokens, so there is no ' +
      'run-level simulation: no power, Monte Carlo trials, failures or checkpoints to show.');
  }
  megasim.done();
})();
