import { type Command, InvalidArgumentError } from 'commander';
import { DibsError } from '../../core/errors.js';
import { createApiKey, DEFAULT_TENANT, publicKey, SCOPES } from '../../service/auth/keys.js';
import type { Dibs } from '../../core/dibs.js';
import { block, output, withDibs } from '../context.js';

const list = (value: string) =>
  value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

function serviceStore(dibs: Dibs) {
  return dibs.backend.service;
}

export function keysCommand(program: Command): void {
  const keys = program.command('keys').description('API keys of the HTTP service: create (shown once), list, revoke');

  keys
    .command('create')
    .description('create an API key; it is printed once and stored only as a hash')
    .requiredOption('--name <name>', 'what the key is for (e.g. "checkout backend")')
    .option(
      '--tenant <tenant>',
      `tenant the key belongs to (default "${DEFAULT_TENANT}": the names the CLI sees)`,
      DEFAULT_TENANT,
    )
    .option('--scopes <list>', `comma-separated: ${SCOPES.join(', ')}, <family>:*`, list, ['admin'])
    .addHelpText(
      'after',
      `
Examples:
  $ dibs keys create --name ops
  $ dibs keys create --name checkout --tenant acme --scopes pools:read,pools:claim,sales:buy`,
    )
    .action(async (opts: { name: string; tenant: string; scopes: string[] }, command: Command) => {
      if (opts.scopes.length === 0) throw new InvalidArgumentError('--scopes needs at least one scope');
      await withDibs(command, async (dibs) => {
        const created = await createApiKey(serviceStore(dibs), {
          tenant: opts.tenant,
          name: opts.name,
          scopes: opts.scopes,
        });
        output(
          command,
          { key: created.key, apiKey: created.record },
          () =>
            `${created.key}\n\n${block([
              ['id', created.record.id],
              ['tenant', created.record.tenant],
              ['name', created.record.name],
              ['scopes', created.record.scopes.join(', ')],
            ])}\n\nKeep it now: it is stored hashed and cannot be shown again.\nUse it as: Authorization: Bearer ${created.key}`,
        );
      });
    });

  keys
    .command('list')
    .description('list API keys (never the keys themselves)')
    .option('--tenant <tenant>', "only this tenant's keys")
    .action(async (opts: { tenant?: string }, command: Command) => {
      await withDibs(command, async (dibs) => {
        const records = (await serviceStore(dibs).listKeys(opts.tenant)).map(publicKey);
        output(command, { data: records }, () => {
          if (records.length === 0) return 'no API keys (create one with: dibs keys create --name <name>)';
          const rows = records.map((k) => [
            k.id,
            k.tenant,
            k.name,
            k.scopes.join(','),
            k.createdAt.slice(0, 19),
            k.revokedAt ? `revoked ${k.revokedAt.slice(0, 19)}` : 'active',
          ]);
          const header = ['id', 'tenant', 'name', 'scopes', 'created', 'state'];
          const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
          return [header, ...rows]
            .map((r) =>
              r
                .map((c, i) => c.padEnd(widths[i]!))
                .join('  ')
                .trimEnd(),
            )
            .join('\n');
        });
      });
    });

  keys
    .command('revoke <id>')
    .description(
      'revoke an API key by its id (other service instances notice within their key cache time, 5 s by default)',
    )
    .action(async (id: string, _opts: unknown, command: Command) => {
      await withDibs(command, async (dibs) => {
        const revoked = await serviceStore(dibs).revokeKey(id);
        if (!revoked) throw new DibsError('not_found', `API key '${id}' does not exist`, { details: { key: id } });
        output(command, publicKey(revoked), () => `revoked API key ${id} (${revoked.name}, tenant ${revoked.tenant})`);
      });
    });
}
