// The page's only way to the engine: fetch() on its own origin with the API key (when auth is
// on) in the Authorization header. The key lives in sessionStorage: one tab's session, never a URL.
const KEY = 'audio-engine.api-key';

export const session = {
  get key() {
    return sessionStorage.getItem(KEY) ?? '';
  },
  set key(value) {
    if (value === '') sessionStorage.removeItem(KEY);
    else sessionStorage.setItem(KEY, value);
  },
};

export function authHeaders() {
  const key = session.key;
  return key === '' ? {} : { Authorization: `Bearer ${key}` };
}

/** An answer that is not 2xx, with the engine's message (which names the field). */
export class ApiError extends Error {
  constructor(status, message, code) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** Calls the API; resolves with { body, etag, status } or throws ApiError. */
export async function api(method, path, body, headers = {}) {
  const init = { method, headers: { ...authHeaders(), ...headers }, cache: 'no-store' };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    throw new ApiError(0, `the engine did not answer (${error.message})`, 'NETWORK');
  }
  const text = await response.text();
  let parsed = null;
  if (text !== '' && (response.headers.get('Content-Type') ?? '').includes('json')) {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = null;
    }
  }
  if (!response.ok) {
    const message = parsed?.message ?? (text.trim() || `HTTP ${response.status}`);
    throw new ApiError(response.status, message, parsed?.code);
  }
  return { body: parsed, etag: response.headers.get('ETag'), status: response.status };
}
