/**
 * Several PostgreSQL hosts in one store URL, libpq style:
 *   postgres://user@db1:5432,db2:5432/app?target_session_attrs=read-write
 * A WHATWG URL holds one host only, so parseStoreUrl moves the list into a `hosts` parameter
 * (the URL keeps the first host) and the backend reads it back here. No `pg` import: the registry
 * loads this module for every postgres URL.
 */
export interface PgHost {
  host: string;
  port: number;
}

/** Which server a connection may use: `read-write` = the primary (default), `any` = the first that answers. */
export type SessionAttrs = 'read-write' | 'any';

const MULTI_HOST = /^(postgres(?:ql)?:\/\/)(?:([^@/?#]*)@)?([^@/?#]*,[^@/?#]*)((?:[/?#].*)?)$/;

/** `postgres://u@a:1,b:2/db?x` → `postgres://u@a:1/db?x&hosts=a:1,b:2`; null for a one-host URL. */
export function foldHosts(store: string): string | null {
  const match = MULTI_HOST.exec(store);
  if (!match) return null;
  const [, scheme, userinfo, list, rest] = match;
  const first = list!.split(',')[0]!;
  const url = new URL(`${scheme}${userinfo !== undefined ? `${userinfo}@` : ''}${first}${rest}`);
  url.searchParams.set('hosts', list!);
  return url.href;
}

/** The `hosts` list (or the URL's one host), default port 5432. */
export function parseHosts(list: string | null, fallback: URL): PgHost[] {
  const entries = list === null ? [fallback.host] : list.split(',');
  return entries.map((entry) => {
    const bracket = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry); // [::1]:5432
    const [host, port] = bracket ? [bracket[1]!, bracket[2]] : (entry.split(':') as [string, string | undefined]);
    const number = port === undefined || port === '' ? 5432 : Number(port);
    if (!host || !Number.isInteger(number) || number < 1 || number > 65535)
      throw new Error(`'${entry}' is not host[:port]`);
    return { host: decodeURIComponent(host), port: number };
  });
}

export function parseSessionAttrs(raw: string | null): SessionAttrs {
  if (raw === null || raw === 'read-write' || raw === 'primary') return 'read-write';
  if (raw === 'any') return 'any';
  throw new Error(`target_session_attrs must be read-write or any (got '${raw}')`);
}
