// A node:test reporter that appends one line per top-level test — file, milliseconds, name — to the
// file named by DIBS_TEST_TIMES, written as each test ends so that --test-force-exit cannot lose it.
// `sort -t$'\t' -k2 -n` on the result shows where the suite's minutes go.
import { appendFileSync } from 'node:fs';
import { relative } from 'node:path';

export default async function* fileTimes(source) {
  const target = process.env.DIBS_TEST_TIMES;
  for await (const event of source) {
    if (!target || (event.type !== 'test:pass' && event.type !== 'test:fail')) continue;
    const { data } = event;
    if (data.nesting !== 0 || !data.file) continue;
    const ms = Math.round(data.details?.duration_ms ?? 0);
    appendFileSync(target, `${relative(process.cwd(), data.file)}\t${ms}\t${data.name}\n`);
  }
  yield ''; // a reporter is a generator of output; this one writes only to its file
}
