#!/usr/bin/env node
// Load with hostile neighbours: N good streaming clients run to the end while 8 hostile clients attack the same
// server, and /health is timed throughout. Prints whether every good stream completed, /health latency
// percentiles, the server's peak and final RSS, and the KV blocks left in use. A benchmark (it prints figures),
// not a test; start it on a quiet machine. With the default settings the figures are recorded as the results page's
// table (docs/results/hostile-load.json and docs/BENCHMARKS.md, through scripts/bench/results.py) unless RECORD=0.
//
//   node scripts/bench/hostile_load.mjs [--binary build/src/cli/pagoda] [--streams 256] [--max-tokens 200]
//                                       [--seconds-after 2] [-- extra serve flags...]
//
// The good clients connect from 127.0.0.1; the hostile ones from 127.0.0.2..9 (other addresses, as on a real
// network, so the per-address connection cap applies to them and not to the good ones). The hostile clients:
//   big-body x2      8 MiB completion and chat bodies, one after another
//   json-bomb        8 MiB of nested brackets and of a flat array of numbers
//   slowloris        32 connections sending a request's headers a byte every 500 ms
//   never-reader     streams of 16 choices x 500 tokens that it never reads (4 at a time)
//   whole-unread     whole responses at the per-request bound (logprobs), never read
//   trailer-garbage  chunked requests with 70 KB trailers, random bytes, broken chunking
//   conn-flood       opens connections up to the per-address cap and holds them
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { Worker } from 'node:worker_threads';

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : dflt;
};
const binary = opt('--binary', 'build/src/cli/pagoda');
const numStreams = Number(opt('--streams', '256'));
const maxTokens = Number(opt('--max-tokens', '200'));
const extra = args.includes('--') ? args.slice(args.indexOf('--') + 1) : [];
const loadAtStart = fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

const server = spawn(binary, ['serve', '--port', '0', ...extra], { stdio: ['ignore', 'ignore', 'pipe'] });
let log = '';
const port = await new Promise((resolve, reject) => {
  server.stderr.on('data', (d) => {
    log += d;
    const m = log.match(/listening on http:\/\/[^:]+:(\d+)/);
    if (m) resolve(Number(m[1]));
  });
  server.on('exit', (code) => reject(new Error(`the server exited (${code}):\n${log}`)));
});
process.stderr.write(`server pid ${server.pid} on port ${port}\n`);

// RSS of the server, sampled every 100 ms.
const rss = [];
const rssOf = () => {
  try {
    const m = fs.readFileSync(`/proc/${server.pid}/status`, 'utf8').match(/VmRSS:\s+(\d+) kB/);
    return m ? Number(m[1]) / 1024 : 0;
  } catch {
    return 0;
  }
};
const rssTimer = setInterval(() => rss.push(rssOf()), 100);

const get = (path) =>
  new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    req.on('error', () => resolve({ status: 0, body: '' }));
  });

// /health every 20 ms on a new connection each time, as a load balancer's probe. The prober runs on its own
// thread (its own event loop): on this one, reading 256 SSE streams and feeding the hostile clients delayed the
// probe's own callbacks, which the latency would have counted against the server.
const prober = new Worker(
  `const { parentPort, workerData } = require('node:worker_threads');
   const http = require('node:http');
   let probing = true;
   const times = [], failures = [];
   parentPort.on('message', () => (probing = false));
   const get = () => new Promise((resolve) => {
     const req = http.get({ host: '127.0.0.1', port: workerData.port, path: '/health', agent: false }, (res) => {
       res.resume();
       res.on('end', () => resolve(res.statusCode));
     });
     req.on('error', () => resolve(0));
   });
   (async () => {
     while (probing) {
       const t0 = performance.now();
       const status = await get();
       times.push(performance.now() - t0);
       if (status !== 200) failures.push(status);
       await new Promise((r) => setTimeout(r, 20));
     }
     parentPort.postMessage({ times, failures });
   })();`,
  { eval: true, workerData: { port } });
const probe = new Promise((resolve) => prober.once('message', resolve));

// Hostile clients: each loops until `stop` is set.
let stop = false;
const hostileSockets = new Set();  // destroyed when the good clients are done, so that KV use can drain to 0
const track = (s) => {
  hostileSockets.add(s);
  s.on('close', () => hostileSockets.delete(s));
  return s;
};
const hostileAddress = (i) => `127.0.0.${2 + i}`;
const rawSend = (i, bytes, { read = true, hold = 0 } = {}) =>
  new Promise((resolve) => {
    const s = track(net.connect({ host: '127.0.0.1', port, localAddress: hostileAddress(i) }));
    s.on('error', () => resolve());
    s.on('close', () => resolve());
    s.on('connect', () => {
      s.write(bytes);
      if (!read) s.pause();
      else s.resume();
      if (hold > 0) setTimeout(() => s.destroy(), hold);
    });
  });
const post = (path, body) =>
  `POST ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n` +
  `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
const bigText = 'Once upon a time there was a little dog. '.repeat(Math.floor((8 << 20) / 42) - 10);
const hostile = [
  async function bigBodyCompletion(i) {
    const body = post('/v1/completions', JSON.stringify({ prompt: bigText, max_tokens: 1 }));
    while (!stop) await rawSend(i, body + '', { hold: 60000 });
  },
  async function bigBodyChat(i) {
    const body = post('/v1/chat/completions', JSON.stringify({ messages: [{ role: 'user', content: bigText }] }));
    while (!stop) await rawSend(i, body, { hold: 60000 });
  },
  async function jsonBomb(i) {
    const deep = post('/v1/completions', '['.repeat(8 << 20));
    const flat = post('/v1/completions', '{"prompt":[' + '1,'.repeat((4 << 20) - 10) + '1]}');
    for (let k = 0; !stop; ++k) await rawSend(i, k % 2 ? deep : flat, { hold: 60000 });
  },
  async function slowloris(i) {
    const one = async () => {
      while (!stop) {
        await new Promise((resolve) => {
          const s = track(net.connect({ host: '127.0.0.1', port, localAddress: hostileAddress(i) }));
          const head = 'POST /v1/completions HTTP/1.1\r\nHost: x\r\nX-Slow: ' + 'a'.repeat(200);
          let k = 0;
          const t = setInterval(() => {
            if (stop || k >= head.length) {
              clearInterval(t);
              s.destroy();
              return;
            }
            s.write(head[k++]);
          }, 500);
          s.on('error', () => {});
          s.on('close', () => {
            clearInterval(t);
            resolve();
          });
        });
      }
    };
    await Promise.all(Array.from({ length: 32 }, one));
  },
  async function neverReader(i) {
    const body = post('/v1/completions',
      JSON.stringify({ prompt: 'Once upon a time', max_tokens: 500, n: 16, stream: true, ignore_eos: true }));
    await Promise.all(Array.from({ length: 4 }, async () => {
      while (!stop) await rawSend(i, body, { read: false, hold: 30000 });
    }));
  },
  async function wholeUnread(i) {
    const body = post('/v1/completions',
      JSON.stringify({ prompt: 'Once upon a time', max_tokens: 500, n: 16, logprobs: 20, ignore_eos: true }));
    await Promise.all(Array.from({ length: 4 }, async () => {
      while (!stop) await rawSend(i, body, { read: false, hold: 30000 });
    }));
  },
  async function trailerGarbage(i) {
    const trailer = 'POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: ' +
      'a'.repeat(70000) + '\r\n\r\n';
    const broken = 'POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n';
    for (let k = 0; !stop; ++k) {
      const random = Buffer.alloc(2000);
      for (let j = 0; j < random.length; ++j) random[j] = Math.floor(Math.random() * 256);
      await rawSend(i, [trailer, broken, random][k % 3], { hold: 2000 });
    }
  },
  async function connFlood(i) {
    const held = [];
    while (!stop) {
      await new Promise((resolve) => {
        const s = track(net.connect({ host: '127.0.0.1', port, localAddress: hostileAddress(i) }));
        s.on('connect', () => {
          held.push(s);
          resolve();
        });
        s.on('error', () => setTimeout(resolve, 100));
        s.on('close', () => setTimeout(resolve, 100));  // refused (503) or timed out: try again a little later
      });
      if (held.length > 600) await new Promise((r) => setTimeout(r, 200));
    }
    for (const s of held) s.destroy();
  },
];
const hostileRuns = hostile.map((fn, i) => fn(i).catch((e) => process.stderr.write(`${fn.name}: ${e}\n`)));
await new Promise((r) => setTimeout(r, 2000));  // the attacks are under way before the good clients start

// The good clients: streams read to [DONE].
const stream = (k) =>
  new Promise((resolve) => {
    const body = JSON.stringify({ prompt: 'Once upon a time', max_tokens: maxTokens, stream: true, ignore_eos: true,
      temperature: 0.8, seed: k });
    const req = http.request({ host: '127.0.0.1', port, path: '/v1/completions', method: 'POST', agent: false,
      localAddress: '127.0.0.1', headers: { 'Content-Type': 'application/json' } }, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => {
        const ok = res.statusCode === 200 && text.endsWith('data: [DONE]\n\n') && !text.includes('"error"');
        resolve({ ok, status: res.statusCode, tokens: (text.match(/"text"/g) || []).length,
          ...(ok ? {} : { body: text.slice(-300) }) });
      });
    });
    req.on('error', (e) => resolve({ ok: false, status: 0, error: String(e) }));
    req.end(body);
  });
const t0 = performance.now();
const results = await Promise.all(Array.from({ length: numStreams }, (_, k) => stream(k)));
const goodSeconds = (performance.now() - t0) / 1000;
stop = true;
for (const s of hostileSockets) s.destroy();
await new Promise((r) => setTimeout(r, Number(opt('--seconds-after', '2')) * 1000));
prober.postMessage('stop');
const { times: health, failures: healthFailures } = await probe;
let metrics = '';
const metric = (name) => {
  const m = metrics.match(new RegExp(`^${name.replace(/[{}"]/g, '\\$&')}(?:\\{[^}]*\\})? ([0-9.e+-]+)$`, 'm'));
  return m ? Number(m[1]) : NaN;
};
// The hostile clients are gone: every request they started ends (its disconnect noticed) within a few seconds.
for (let waited = 0; ; waited += 250) {
  metrics = (await get('/metrics')).body;
  if (metric('pagoda:num_requests_running') === 0 || waited >= 10000) break;
  await new Promise((r) => setTimeout(r, 250));
}
await new Promise((r) => setTimeout(r, 500));
const finalRss = rssOf();
clearInterval(rssTimer);
server.kill('SIGTERM');
await Promise.race([Promise.allSettled(hostileRuns), new Promise((r) => setTimeout(r, 3000))]);

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] : NaN;
};
const cpu = fs.readFileSync('/proc/cpuinfo', 'utf8').match(/model name\s*:\s*(.*)/)?.[1] ?? '?';
const okCount = results.filter((r) => r.ok).length;
console.log(`cpu: ${cpu}, ${(await import('node:os')).cpus().length} cores`);
console.log(`good streams: ${okCount}/${numStreams} completed (${maxTokens} tokens each, ${goodSeconds.toFixed(1)} s)`);
if (okCount < numStreams)
  console.log('  failures:', JSON.stringify(results.filter((r) => !r.ok).slice(0, 5)));
console.log(`/health: ${health.length} probes, p50 ${pct(health, 50).toFixed(1)} ms, p99 ${pct(health, 99).toFixed(1)} ms, ` +
  `max ${Math.max(...health).toFixed(1)} ms, non-200: ${healthFailures.length}`);
console.log(`RSS: peak ${Math.max(...rss).toFixed(0)} MiB, after the load ${finalRss.toFixed(0)} MiB`);
console.log(`KV cache usage after the load: ${metric("pagoda:kv_cache_usage_perc")}, free blocks ${metric("pagoda:kv_cache_free_blocks")} ` +
  `(running ${metric('pagoda:num_requests_running')}, waiting ${metric('pagoda:num_requests_waiting')})`);
const defaults = numStreams === 256 && maxTokens === 200 && extra.length === 0;
if (process.env.RECORD !== '0' && defaults) {
  const row = [`${okCount}/${numStreams}`, `${goodSeconds.toFixed(1)} s`, `${pct(health, 50).toFixed(1)} ms`,
    `${pct(health, 99).toFixed(1)} ms`, `${Math.max(...health).toFixed(1)} ms`, `${healthFailures.length}`,
    `${Math.max(...rss).toFixed(0)} MiB`, `${finalRss.toFixed(0)} MiB`,
    `${metric('pagoda:kv_cache_free_blocks')}`].join(' | ');
  const recorded = spawnSync('python3', [new URL('./results.py', import.meta.url).pathname, 'record', '--id',
    'hostile-load', '--no-peer', '--command', 'node scripts/bench/hostile_load.mjs', '--columns',
    'good streams completed|time|/health p50|p99|max|non-200|RSS peak|RSS after|KV blocks free after', '--note',
    `${numStreams} streaming completions (${maxTokens} tokens each, ignore_eos) on the bundled stories260K with ` +
    `default serve flags while 8 hostile clients send 8 MiB bodies, 8 MiB JSON bombs, 32 slowloris connections, ` +
    `never-read streams, never-read whole responses at the per-request bound, oversized trailers, broken chunking, ` +
    `random bytes and a connection flood up to the per-address cap; a prober times /health throughout. Load at start ` +
    `${loadAtStart}.`], { input: row + '\n', stdio: ['pipe', 'inherit', 'inherit'] });
  process.exit(recorded.status ?? 1);
}
process.exit(0);
