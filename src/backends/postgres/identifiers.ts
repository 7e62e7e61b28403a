/** An SQL identifier (schema, table) quoted for PostgreSQL: its own module so that connection.ts and pooler.ts both import it. */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
