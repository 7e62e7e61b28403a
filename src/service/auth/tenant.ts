/**
 * Tenant isolation by namespacing: tenant `acme`'s pool `spring` is stored as `acme~spring`.
 * Every name a request gives goes through `internal…` (validated by the user-facing rule, which
 * never allows `~`), and every response goes through `external` (prefix stripped). Objects of
 * other tenants are simply never found: 404, like objects that do not exist. The default tenant
 * has no prefix, so what the CLI and the library create is what its keys see.
 */
import { DibsError } from '../../core/errors.js';
import { localPoolNameSchema, TENANT_SEPARATOR } from '../../core/schemas.js';
import { localLockKeySchema } from '../../core/locks/schemas.js';
import { localSaleIdSchema, localSkuSchema } from '../../core/sales/schemas.js';
import { parseInput } from '../../core/validate.js';
import { DEFAULT_TENANT } from './keys.js';

/** Fields of responses that carry (possibly namespaced) names. */
const NAME_FIELDS = new Set(['name', 'pool', 'sale', 'saleId', 'sku', 'key', 'id', 'nextCursor', 'subject']);
/** Never rewritten: user data. */
const OPAQUE_FIELDS = new Set(['metadata', 'channels', 'claimant', 'customer', 'code', 'codes', 'held']);

const noSeparator = (value: string, field: string): string => {
  if (value.includes(TENANT_SEPARATOR))
    throw new DibsError('invalid_input', `${field}: must not contain '${TENANT_SEPARATOR}'`, { field });
  return value;
};

export class Tenant {
  readonly prefix: string;

  constructor(readonly id: string) {
    this.prefix = id === DEFAULT_TENANT ? '' : `${id}${TENANT_SEPARATOR}`;
  }

  pool(name: unknown, field = 'pool'): string {
    return this.prefix + parseInput(localPoolNameSchema, name, field);
  }

  sale(id: unknown, field = 'sale'): string {
    return this.prefix + parseInput(localSaleIdSchema, id, field);
  }

  sku(sku: unknown, field = 'sku'): string {
    return this.prefix + noSeparator(parseInput(localSkuSchema, sku, field), field);
  }

  /** Lock keys and counter names. */
  key(key: unknown, field = 'key'): string {
    return this.prefix + noSeparator(parseInput(localLockKeySchema, key, field), field);
  }

  /** Is this internal name one of this tenant's? */
  owns(internal: string): boolean {
    if (this.prefix) return internal.startsWith(this.prefix);
    return !/^[a-z0-9][a-z0-9_-]{0,31}~/.test(internal);
  }

  local(internal: string): string {
    return this.prefix && internal.startsWith(this.prefix) ? internal.slice(this.prefix.length) : internal;
  }

  /** A response value with this tenant's namespace removed from every name field. */
  external<T>(value: T): T {
    return this.prefix ? (strip(value, this.prefix) as T) : value;
  }

  /** An error message or other text with namespaced names made local. */
  text(message: string): string {
    return this.prefix ? message.split(this.prefix).join('') : message;
  }
}

function strip(value: unknown, prefix: string, field?: string): unknown {
  if (typeof value === 'string')
    return field !== undefined && NAME_FIELDS.has(field) && value.startsWith(prefix)
      ? value.slice(prefix.length)
      : value;
  if (Array.isArray(value))
    return value.map((v) => strip(v, prefix, field === 'sales' || field === 'skus' ? field.slice(0, -1) : undefined));
  if (value && typeof value === 'object' && (value as object).constructor === Object) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = OPAQUE_FIELDS.has(k) ? v : strip(v, prefix, k);
    return out;
  }
  return value;
}

/**
 * One page of a tenant's objects from a store list ordered byte-wise by internal name. A
 * namespaced tenant's names are one contiguous run starting at its prefix: start there and stop
 * at the first name outside it. The default tenant's names interleave with namespaced ones and
 * are filtered page by page (bounded rounds). `after` is the caller's (local) cursor.
 */
export async function listOwned<T>(
  tenant: Tenant,
  fetch: (options: { limit: number; after?: string }) => Promise<{ items: T[]; nextCursor: string | null }>,
  nameOf: (item: T) => string,
  options: { limit: number; after?: string },
): Promise<{ data: T[]; nextCursor: string | null }> {
  const { limit } = options;
  const items: T[] = [];
  let cursor = options.after === undefined ? tenant.prefix || undefined : tenant.prefix + options.after;
  for (let round = 0; round < 50; round++) {
    const page = await fetch({
      limit: Math.min(1000, limit - items.length + (tenant.prefix ? 0 : 50)),
      ...(cursor ? { after: cursor } : {}),
    });
    for (const item of page.items) {
      if (!tenant.owns(nameOf(item))) {
        if (tenant.prefix) return { data: items, nextCursor: null };
        continue;
      }
      items.push(item);
      if (items.length >= limit) return { data: items, nextCursor: nameOf(item) };
    }
    if (!page.nextCursor || page.items.length === 0) return { data: items, nextCursor: null };
    cursor = nameOf(page.items.at(-1)!);
  }
  return { data: items, nextCursor: items.length ? nameOf(items.at(-1)!) : null };
}
