/**
 * Parses the text form of a GstStructure as `gst-launch-1.0 -m` prints it:
 *   name, field=(type)value, field=(type)"string", field=(GValueArray)< 1, 2 >
 * Never throws: malformed input gives undefined (or the fields read so far are dropped).
 */
export type GstValue = number | boolean | string | GstValue[];

export interface GstStructure {
  name: string;
  fields: Map<string, GstValue>;
}

const NUMERIC_TYPES = new Set([
  'double', 'float', 'int', 'uint', 'gint', 'guint', 'int64', 'uint64', 'gint64', 'guint64', 'long', 'ulong', 'gint32', 'guint32',
]);

/** Reads one value starting at `i`; returns the raw text and the index after it. */
function readValue(text: string, start: number): { raw: string; end: number } | undefined {
  let i = start;
  const first = text[i];
  if (first === '"') {
    i++;
    while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
    if (i >= text.length) return undefined;
    return { raw: text.slice(start, i + 1), end: i + 1 };
  }
  if (first === '<' || first === '{' || first === '[') {
    const close: Record<string, string> = { '<': '>', '{': '}', '[': ']' };
    const stack: string[] = [];
    let inString = false;
    for (; i < text.length; i++) {
      const c = text[i] ?? '';
      if (inString) {
        if (c === '\\') i++;
        else if (c === '"') inString = false;
        continue;
      }
      if (c === '"') inString = true;
      else if (c === '<' || c === '{' || c === '[') stack.push(close[c] ?? '');
      else if (c === stack[stack.length - 1]) {
        stack.pop();
        if (stack.length === 0) return { raw: text.slice(start, i + 1), end: i + 1 };
      }
    }
    return undefined;
  }
  while (i < text.length && !(text[i] === ',' && text[i + 1] === ' ') && text[i] !== ';') i += text[i] === '\\' ? 2 : 1;
  return { raw: text.slice(start, i), end: i };
}

function unescape(raw: string): string {
  return raw.replace(/\\(.)/g, '$1');
}

export function convertValue(type: string, raw: string): GstValue | undefined {
  if (raw.startsWith('<') || raw.startsWith('{') || raw.startsWith('[')) {
    const inner = raw.slice(1, -1).trim();
    if (inner === '') return [];
    const items: GstValue[] = [];
    let i = 0;
    while (i < inner.length) {
      while (inner[i] === ' ' || inner[i] === ',') i++;
      if (i >= inner.length) break;
      let itemType = type === 'GValueArray' || type === 'GstValueArray' || type === 'GstValueList' ? '' : type;
      const typed = /^\(([A-Za-z0-9_]+)\)/.exec(inner.slice(i));
      if (typed?.[1] !== undefined) {
        itemType = typed[1];
        i += typed[0].length;
      }
      const value = readValue(inner, i);
      if (value === undefined) return undefined;
      const converted = convertValue(itemType === '' ? 'double' : itemType, value.raw.trim());
      if (converted === undefined) return undefined;
      items.push(converted);
      i = value.end;
    }
    return items;
  }
  if (NUMERIC_TYPES.has(type)) {
    const text = raw.trim();
    if (text === 'inf' || text === '+inf') return Number.POSITIVE_INFINITY;
    if (text === '-inf') return Number.NEGATIVE_INFINITY;
    if (text === 'nan' || text === '-nan') return Number.NaN;
    const n = Number(text);
    return Number.isNaN(n) ? undefined : n;
  }
  if (type === 'boolean' || type === 'gboolean') {
    if (/^(true|yes|1)$/i.test(raw)) return true;
    if (/^(false|no|0)$/i.test(raw)) return false;
    return undefined;
  }
  if (raw.startsWith('"') && raw.endsWith('"') && raw.length >= 2) return unescape(raw.slice(1, -1));
  return unescape(raw);
}

export function parseStructure(text: string): GstStructure | undefined {
  const body = text.endsWith(';') ? text.slice(0, -1) : text;
  const nameEnd = body.indexOf(', ');
  const name = nameEnd === -1 ? body : body.slice(0, nameEnd);
  if (!/^[A-Za-z][A-Za-z0-9_+-]*$/.test(name)) return undefined;
  const fields = new Map<string, GstValue>();
  let i = nameEnd === -1 ? body.length : nameEnd + 2;
  while (i < body.length) {
    const head = /^([A-Za-z][A-Za-z0-9_+-]*)=\(([A-Za-z0-9_]+)\)/.exec(body.slice(i));
    if (head?.[1] === undefined || head[2] === undefined) return undefined;
    i += head[0].length;
    const value = readValue(body, i);
    if (value === undefined) return undefined;
    const converted = convertValue(head[2], value.raw);
    if (converted !== undefined) fields.set(head[1], converted);
    i = value.end;
    if (body.startsWith(', ', i)) i += 2;
    else if (i < body.length) return undefined;
  }
  return { name, fields };
}
