// Shared by every page of the dashboard: the API key of this tab, calls to the service's /v1 API
// with it, and small DOM helpers that build elements without markup strings (no injection).

const KEY_STORAGE = 'dibs.apiKey';

export const session = {
  key: sessionStorage.getItem(KEY_STORAGE),
  /** Called on any 401: the page returns to the log-in screen. */
  onUnauthorized: () => {},
  save(key) {
    this.key = key;
    sessionStorage.setItem(KEY_STORAGE, key);
  },
  clear() {
    this.key = null;
    sessionStorage.removeItem(KEY_STORAGE);
  },
};

export class ApiError extends Error {
  constructor(status, error) {
    super(error?.message ?? `HTTP ${status}`);
    this.status = status;
    this.code = error?.code ?? 'http_error';
    this.field = error?.field;
  }
}

export function authHeaders(extra = {}) {
  return { authorization: `Bearer ${session.key}`, ...extra };
}

const UNAUTHORIZED = 'Your API key was not accepted (or was revoked). Log in again.';

export async function api(method, path, { body, raw } = {}) {
  const init = { method, headers: authHeaders(body === undefined ? {} : { 'content-type': 'application/json' }) };
  if (body !== undefined) init.body = JSON.stringify(body);
  const response = await fetch(path, init);
  if (response.status === 401) {
    session.onUnauthorized(UNAUTHORIZED);
    throw new ApiError(401, { code: 'unauthorized', message: 'unauthorized' });
  }
  if (!response.ok) throw new ApiError(response.status, (await response.json().catch(() => null))?.error);
  if (raw) return response;
  return response.status === 204 ? null : response.json();
}

/**
 * Uploads a file as text/csv with progress (fetch cannot report upload progress; XHR can). The
 * browser streams the file from disk; the service imports it as it arrives.
 */
export function upload(path, file, onProgress) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', path);
    xhr.setRequestHeader('authorization', `Bearer ${session.key}`);
    xhr.setRequestHeader('content-type', 'text/csv');
    xhr.upload.onprogress = (event) => event.lengthComputable && onProgress(event.loaded / event.total);
    xhr.onerror = () => reject(new ApiError(0, { message: 'network error during upload' }));
    xhr.onload = () => {
      let data = null;
      try {
        data = JSON.parse(xhr.responseText);
      } catch {
        /* not JSON */
      }
      if (xhr.status === 401) {
        session.onUnauthorized(UNAUTHORIZED);
        reject(new ApiError(401, data?.error));
      } else if (xhr.status >= 200 && xhr.status < 300) resolve(data);
      else reject(new ApiError(xhr.status, data?.error));
    };
    xhr.send(file);
  });
}

/** Fetches with the key and saves the answer as a file (a bare link could not carry the key). */
export async function download(path, filename) {
  const response = await api('GET', path, { raw: true });
  const url = URL.createObjectURL(await response.blob());
  const link = h('a', { href: url, download: filename, hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

export const enc = encodeURIComponent;
export const $ = (id) => document.getElementById(id);

/** h('td', {class: 'x'}, child, 'text', …): builds elements without markup strings (no injection). */
export function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else if (k in node && k !== 'list') node[k] = v;
    else node.setAttribute(k, v === true ? '' : String(v));
  }
  for (const child of children.flat())
    if (child !== null && child !== undefined && child !== false)
      node.append(child instanceof Node ? child : String(child));
  return node;
}

const rendered = new Map(); // tbody id → last rendered data (JSON), so unchanged rows keep focus

/** Replaces a table body's rows, but only when its data changed (keyboard focus stays put). */
export function renderRows(tbodyId, data, columns, makeRows, emptyText) {
  const signature = JSON.stringify([data, emptyText]);
  if (rendered.get(tbodyId) === signature) return;
  rendered.set(tbodyId, signature);
  const rows = data.length ? makeRows(data) : [h('tr', {}, h('td', { colSpan: columns, class: 'empty' }, emptyText))];
  $(tbodyId).replaceChildren(...rows);
}

export function forgetRendered(tbodyId) {
  if (tbodyId === undefined) rendered.clear();
  else rendered.delete(tbodyId);
}

export function showResult(id, message, ok) {
  const node = $(id);
  node.textContent = message;
  node.className = `result ${ok ? 'ok' : 'error'}`;
}

export function toast(message) {
  $('toast').textContent = message;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => ($('toast').textContent = ''), 5000);
}

export const describe = (error) =>
  error.status === 403 ? `not allowed with this key: ${error.message}` : error.message;
export const number = (n) => (n === null || n === undefined ? '∞' : Number(n).toLocaleString());

export function duration(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  const d = Math.floor(s / 86400),
    hh = Math.floor((s % 86400) / 3600),
    mm = Math.floor((s % 3600) / 60),
    ss = s % 60;
  if (d) return `${d}d ${hh}h ${mm}m`;
  if (hh) return `${hh}h ${mm}m ${ss}s`;
  if (mm) return `${mm}m ${ss}s`;
  return `${ss}s`;
}

/** "empty in ~4 min at 120/min" from a forecast answer (pools and sales alike). */
export function forecastText(f, empty = 'empty') {
  if (f.timeToEmptyMs === null) return f.basis ? 'not emptying at this pace' : 'no recent activity';
  if (f.timeToEmptyMs === 0) return empty;
  const pace = f.basis ? f.perMinute[f.basis] : 0;
  return `${empty} in ~${duration(f.timeToEmptyMs)} at ${pace}/min (last ${f.basis})`;
}

/** Runs a form's action with its submit button disabled; the answer or error lands in the form's result line. */
export function onSubmit(formId, resultId, action) {
  $(formId).addEventListener('submit', async (event) => {
    event.preventDefault();
    const form = event.currentTarget;
    if (!form.reportValidity()) return;
    const button = form.querySelector('button[type=submit]');
    button.disabled = true;
    try {
      const message = await action(form);
      if (message) showResult(resultId, message, true);
    } catch (error) {
      if (error.status !== 401) showResult(resultId, describe(error), false);
    } finally {
      button.disabled = false;
    }
  });
}

/** A `datetime-local` value (the browser's time zone) ↔ an ISO instant. */
export const fromLocalInput = (value) => new Date(value).toISOString();
export function toLocalInput(iso) {
  const d = new Date(iso);
  const pad = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}
