// A module-resolution hook (node --import) that makes the packages named in DIBS_HIDE_PACKAGES
// resolve as "not installed", exactly as when they are missing from node_modules.
import { register } from 'node:module';

const hidden = (process.env.DIBS_HIDE_PACKAGES ?? '').split(',').filter(Boolean);
register(
  `data:text/javascript,${encodeURIComponent(`
const hidden = ${JSON.stringify(hidden)};
export async function resolve(specifier, context, next) {
  if (hidden.some((name) => specifier === name || specifier.startsWith(name + '/'))) {
    const error = new Error("Cannot find package '" + specifier + "' imported from " + context.parentURL);
    error.code = 'ERR_MODULE_NOT_FOUND';
    throw error;
  }
  return next(specifier, context);
}`)}`,
);
