// Server-Sent Events read with fetch() (EventSource cannot send an Authorization header, and a
// key in the URL would end up in logs). Reconnects after `retry` ms; a 401 hands back to login.
import { authHeaders } from './api.js';

/** Splits an SSE block into { event, data } (comments and unknown fields are skipped). */
export function parseBlock(block) {
  let event = 'message';
  const data = [];
  for (const line of block.split('\n')) {
    if (line === '' || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
  }
  return data.length === 0 ? undefined : { event, data: data.join('\n') };
}

/**
 * Opens /api/v1/events and calls onEvent(name, parsed JSON) for each event; onState('live' |
 * 'lost' | 'unauthorized'). Returns a function that closes the stream for good.
 */
export function openStream(onEvent, onState) {
  let closed = false;
  let controller;
  let retryMs = 2000;
  const run = async () => {
    controller = new AbortController();
    try {
      const response = await fetch('/api/v1/events', { headers: authHeaders(), signal: controller.signal, cache: 'no-store' });
      if (response.status === 401) {
        closed = true;
        onState('unauthorized');
        return;
      }
      if (!response.ok || response.body === null) throw new Error(`HTTP ${response.status}`);
      onState('live');
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value.replace(/\r\n?/g, '\n');
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const retry = /^retry: ?(\d+)$/m.exec(block);
          if (retry) retryMs = Number(retry[1]);
          const parsed = parseBlock(block);
          if (parsed !== undefined) onEvent(parsed.event, JSON.parse(parsed.data));
        }
      }
    } catch {
      // lost: retried below
    }
    if (closed) return;
    onState('lost');
    setTimeout(() => {
      if (!closed) void run();
    }, retryMs);
  };
  void run();
  return () => {
    closed = true;
    controller?.abort();
  };
}
