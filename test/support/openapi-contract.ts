/**
 * Checks answers against the service's own OpenAPI document: the status must be one the
 * operation documents, and a JSON body must match that status' schema (JSON Schema 2020-12, the
 * dialect of OpenAPI 3.1, checked by ajv). Clients are generated from that document, so an
 * undocumented status or a field it does not describe is a broken promise, not a style issue.
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

type Json = Record<string, unknown>;
interface Operation {
  responses: Record<string, { $ref?: string; content?: Record<string, { schema?: Json }> }>;
}

// ajv-formats is CommonJS: under ESM its function may sit on `default`.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv2020,
) => void;

export class OpenApiContract {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: false });
  private readonly routes: { method: string; path: string; pattern: RegExp; params: number; operation: Operation }[] =
    [];
  private readonly validators = new Map<string, ValidateFunction>();
  /** (operation, status) pairs seen, to show what a run covered. */
  readonly seen = new Set<string>();

  constructor(private readonly doc: Json) {
    addFormats(this.ajv);
    // The whole document is one schema resource, so `#/components/schemas/X` refs resolve in it.
    this.ajv.addSchema({ $id: 'dibs:openapi', components: doc.components } as Json);
    for (const [path, methods] of Object.entries(doc.paths as Record<string, Record<string, Operation>>)) {
      const pattern = new RegExp(`^${path.replace(/\{\w+\}/g, '[^/]+')}$`);
      const params = (path.match(/\{/g) ?? []).length;
      for (const [method, operation] of Object.entries(methods))
        this.routes.push({ method: method.toUpperCase(), path, pattern, params, operation });
    }
    // A static segment wins over a parameter, as in the router.
    this.routes.sort((a, b) => a.params - b.params);
  }

  /**
   * Problems with one answer (empty: it keeps the contract). `url` is the request URL as sent;
   * a path no operation matches is not checked here (the router's 404 has the error shape).
   */
  check(method: string, url: string, status: number, contentType: string | undefined, body: string): string[] {
    // as the server sees it: dot segments resolved, a trailing slash ignored (ignoreTrailingSlash)
    const path = new URL(url, 'http://dibs.test').pathname.replace(/(.)\/$/, '$1');
    const route = this.routes.find((r) => r.method === method && r.pattern.test(path));
    if (!route) return [];
    const what = `${method} ${route.path} → ${status}`;
    this.seen.add(`${method} ${route.path} ${status}`);
    let response = route.operation.responses[String(status)];
    if (!response)
      return [
        `${what}: status not documented (documented: ${Object.keys(route.operation.responses).join(', ')}); body ${body.slice(0, 200)}`,
      ];
    if (response.$ref) response = this.resolve(response.$ref) as typeof response;
    const media = response.content?.['application/json'];
    if (!media?.schema) return [];
    if (!contentType?.startsWith('application/json'))
      return [`${what}: documented as JSON, answered ${contentType ?? 'no content type'}`];
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      return [`${what}: not JSON: ${body.slice(0, 200)}`];
    }
    const key = `${route.path} ${method} ${status}`;
    let validate = this.validators.get(key);
    if (!validate) this.validators.set(key, (validate = this.ajv.compile(this.rebase(media.schema))));
    if (validate(parsed)) return [];
    return [
      `${what}: body does not match the documented schema: ${this.ajv.errorsText(validate.errors)}; body ${body.slice(0, 300)}`,
    ];
  }

  private resolve(ref: string): unknown {
    return ref
      .replace(/^#\//, '')
      .split('/')
      .reduce<unknown>((node, part) => (node as Json)[part], this.doc);
  }

  /** Local refs of an inline schema point into the registered document. */
  private rebase(schema: Json): Json {
    return JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"dibs:openapi#/components/')) as Json;
  }
}
