/**
 * Each request's logger (`request.log`), made only when the request logs something its level lets
 * through. Fastify gives every request a child of the server's pino logger bound to its request
 * id; pino serialises the bindings when the child is made, so a request that logs nothing (every
 * successful request at the default `warn` of `dibs serve --log-level warn`, and every one below
 * the configured level) paid for a child it never used. The real child, made on the first line
 * that is written, carries the same bindings and options, so what is logged is unchanged.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions, Level } from 'pino';

/** The pino logger Fastify made for the server (it has isLevelEnabled; the type Fastify exposes does not say so). */
type ServerLogger = FastifyBaseLogger & { isLevelEnabled(level: string): boolean };

class RequestLogger {
  #child: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: ServerLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  /** The pino child, made on first use. */
  private get real(): FastifyBaseLogger {
    this.#child ??= this.parent.child(this.bindings, this.options);
    return this.#child;
  }

  get level(): string {
    return this.#child ? this.#child.level : this.parent.level;
  }

  set level(level: string) {
    this.real.level = level;
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.real.child(bindings, options);
  }

  /** A line at `level`: through the child, made now if the level lets the line through. */
  private write(level: Level, args: unknown[]): void {
    let child = this.#child;
    if (!child) {
      if (!this.parent.isLevelEnabled(level)) return;
      child = this.real;
    }
    (child[level] as (...line: unknown[]) => void).apply(child, args);
  }

  fatal(...args: unknown[]): void {
    this.write('fatal', args);
  }
  error(...args: unknown[]): void {
    this.write('error', args);
  }
  warn(...args: unknown[]): void {
    this.write('warn', args);
  }
  info(...args: unknown[]): void {
    this.write('info', args);
  }
  debug(...args: unknown[]): void {
    this.write('debug', args);
  }
  trace(...args: unknown[]): void {
    this.write('trace', args);
  }
  silent(): void {}
}

/**
 * Fastify's `childLoggerFactory` for the service. A route with its own level (`logLevel`) gets
 * its pino child at once: the lazy one reads the server's level.
 */
export function requestLogger(
  this: unknown,
  logger: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  if (options.level !== undefined) return logger.child(bindings, options);
  return new RequestLogger(logger as ServerLogger, bindings, options) as unknown as FastifyBaseLogger;
}
