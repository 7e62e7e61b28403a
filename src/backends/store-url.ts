/**
 * Store URLs: parsing (several hosts folded into a parameter), the scheme that picks a backend,
 * and the form safe for logs. Its own module so that backends (tiered) and the registry that
 * loads them both import it without importing each other.
 */
import { DibsError } from '../core/errors.js';
import { foldHosts } from './postgres/hosts.js';

export function parseStoreUrl(store: string): URL {
  // `redis+cluster://a:1,b:2/…` and `redis+sentinel://a:1,b:2/master/0` name several hosts, which
  // a WHATWG URL cannot hold: the host list moves into a `nodes` parameter.
  const cluster = /^redis\+(cluster|sentinel):\/\/(?:([^@/?#]*)@)?([^/?#]+)(.*)$/.exec(store);
  if (cluster) {
    const url = new URL(`redis+${cluster[1]}://${cluster[2] ? `${cluster[2]}@` : ''}${cluster[1]}${cluster[4]}`);
    url.searchParams.set('nodes', cluster[3]!);
    return url;
  }
  // `postgres://a:5432,b:5432/db` (libpq's multi-host form): the list moves into a `hosts` parameter.
  const hosts = foldHosts(store);
  try {
    return new URL(hosts ?? store);
  } catch {
    throw new DibsError(
      'invalid_input',
      `store: '${redact(store)}' is not a URL (try sqlite:./dibs.db, postgres://…, redis://…)`,
      { field: 'store' },
    );
  }
}

export function schemeOf(url: URL): string {
  const scheme = url.protocol.replace(/:$/, '');
  return scheme === 'postgresql' ? 'postgres' : scheme === 'rediss' ? 'redis' : scheme;
}

/** The store URL without its password, for logs and messages. */
export function redact(store: string): string {
  return store.replace(/\/\/([^:/@]*):[^@/]*@/, '//$1:***@');
}
