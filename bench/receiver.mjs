// Benchmark receiver, in its own process so it doesn't share the worker's event loop.
// Answers 200 to every POST (except under /dead: never) and reports (event id, arrival time) to the parent in batches.
import http from 'node:http';

const delayMs = Number(process.env.BENCH_RECEIVER_DELAY_MS ?? 0);
let batch = [];
const flush = () => {
  if (batch.length) process.send({ arrivals: batch });
  batch = [];
};
setInterval(flush, 50).unref();
const server = http.createServer((req, res) => {
  // A dead endpoint (bench/fairness.ts): takes the request and never answers.
  if (req.url.startsWith('/dead')) return void req.resume();
  const id = req.headers['service-event-id'];
  req.resume();
  req.on('end', () => {
    batch.push([id, req.url, performance.timeOrigin + performance.now()]);
    const answer = () => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    if (delayMs) setTimeout(answer, delayMs);
    else answer();
  });
});
server.keepAliveTimeout = 10_000;
server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
process.on('message', (m) => {
  if (m !== 'stop') return;
  flush();
  server.close();
  process.exit(0);
});
