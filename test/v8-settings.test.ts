// The V8 settings src/start.ts applies at run time take effect: V8's own pretenuring trace shows no
// allocation-site pretenuring once they are applied, and shows it without them (the control, so
// that the test can fail).
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SETTINGS = fileURLToPath(new URL('../src/runtime/v8-settings.ts', import.meta.url));

/**
 * Lines of V8's pretenuring statistics from a child that keeps many objects from two allocation
 * sites: a million, many times what V8 needs to start pretenuring them.
 */
async function pretenuringTrace(applySettings: boolean): Promise<string[]> {
  const script = `
    import { setFlagsFromString } from 'node:v8';
    if (${applySettings}) (await import(${JSON.stringify(SETTINGS)})).applyV8Settings();
    setFlagsFromString('--trace-pretenuring-statistics');
    const keep = [];
    const make = (i) => ({ a: i, b: [i, i + 1] });
    for (let round = 0; round < 50; round++) {
      for (let i = 0; i < 20000; i++) keep.push(make(i));
    }
    console.log('kept', keep.length);`;
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  return stdout.split('\n').filter((line) => line.includes('pretenuring'));
}

describe('V8 settings applied at run time', () => {
  it('turn allocation-site pretenuring off, which V8 otherwise does', async () => {
    const [without, applied] = await Promise.all([pretenuringTrace(false), pretenuringTrace(true)]);
    expect(without.length).toBeGreaterThan(0);
    expect(applied).toEqual([]);
  });
});
