/**
 * Wraps a backend object so every rejection (and every error thrown while iterating an async
 * generator) passes through `translate` — one place per backend that turns driver errors
 * (connection refused, closed socket, server loading) into a retriable `unavailable`.
 */
export function translateErrors<T extends object>(target: T, translate: (error: unknown) => unknown): T {
  return new Proxy(target, {
    get(object, property, receiver) {
      const value = Reflect.get(object, property, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        let result: unknown;
        try {
          result = (value as (...a: unknown[]) => unknown).apply(object, args);
        } catch (error) {
          throw translate(error);
        }
        if (result instanceof Promise) return result.catch((error: unknown) => Promise.reject(translate(error)));
        if (result && typeof (result as AsyncIterable<unknown>)[Symbol.asyncIterator] === 'function')
          return translateIterable(result as AsyncIterable<unknown>, translate);
        return result;
      };
    },
  });
}

async function* translateIterable<V>(
  iterable: AsyncIterable<V>,
  translate: (error: unknown) => unknown,
): AsyncIterable<V> {
  try {
    yield* iterable;
  } catch (error) {
    throw translate(error);
  }
}
