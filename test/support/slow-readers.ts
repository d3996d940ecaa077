// Slow readers on real sockets with small receive windows, for test/reliability/slow-readers.test.ts
// and the benchmark's "under attack" scenario (bench/under-attack.ts). They are python3 sockets:
// Node cannot set a socket's receive buffer (SO_RCVBUF). Keep them to a few hundred: each can hold
// megabytes of the host's kernel TCP memory.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

/**
 * `hold PORT COUNT REPEAT PATH FROM`: COUNT sockets from the local address FROM with a 2 KiB receive
 * buffer, each sending REPEAT pipelined GETs of PATH, never reading; prints `ready <connected>` and holds them until stdin closes.
 * `read PORT REPEAT PATH BUFFER STEP INTERVAL`: one socket with a BUFFER-byte receive buffer sending
 * REPEAT pipelined GETs of PATH, reading STEP bytes every INTERVAL seconds until it has every
 * answer; prints `complete|cut <answers> <bytes>`.
 */
const PYTHON = String.raw`
import socket, sys, time
mode, port = sys.argv[1], int(sys.argv[2])
def opened(buffer, source='127.0.0.1'):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, buffer)
    s.bind((source, 0))
    s.connect(('127.0.0.1', port))
    return s
if mode == 'hold':
    count, repeat, path, source = int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
    held = []
    for _ in range(count):
        try:
            s = opened(2048, source)
            s.sendall(('GET %s HTTP/1.1\r\nHost: x\r\n\r\n' % path).encode() * repeat)
            held.append(s)
        except OSError:
            pass
    print('ready %d' % len(held), flush=True)
    sys.stdin.read()
else:
    repeat, path, buffer, step, interval = int(sys.argv[3]), sys.argv[4], int(sys.argv[5]), int(sys.argv[6]), float(sys.argv[7])
    s = opened(buffer)
    s.sendall(('GET %s HTTP/1.1\r\nHost: x\r\n\r\n' % path).encode() * repeat)
    s.settimeout(30)
    head, body_left, answers, received, state = b'', 0, 0, 0, 'complete'
    while answers < repeat:
        time.sleep(interval)
        try:
            chunk = s.recv(step)
        except OSError:
            chunk = b''
        if not chunk:
            state = 'cut'
            break
        received += len(chunk)
        while chunk:
            if body_left:
                taken = min(body_left, len(chunk))
                body_left -= taken
                chunk = chunk[taken:]
                answers += body_left == 0
                continue
            head += chunk
            chunk = b''
            end = head.find(b'\r\n\r\n')
            if end >= 0:
                length = int([l for l in head[:end].split(b'\r\n') if l.lower().startswith(b'content-length:')][0].split(b':')[1])
                chunk, head, body_left = head[end + 4:], b'', length
    print('%s %d %d' % (state, answers, received), flush=True)
`;

/** Runs the python helper; resolves with its first line of output, and the process (to end it). */
async function python(...args: Array<string | number>): Promise<{ line: string; child: ChildProcess }> {
  const child = spawn('python3', ['-c', PYTHON, ...args.map(String)], { stdio: ['pipe', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', (error) =>
      reject(new Error(`python3 is needed for the slow readers (Debian: apt-get install python3): ${error.message}`)),
    );
  });
  const lines = createInterface({ input: child.stdout });
  const line = await new Promise<string>((resolve, reject) => {
    lines.once('line', resolve);
    child.once('exit', (code) => reject(new Error(`python3 exited with ${code} before answering`)));
  });
  return { line, child };
}

export interface HeldReaders {
  /** Connections opened and holding their requests. */
  connected: number;
  stop(): void;
}

/**
 * `count` connections from `from` (a loopback address) with a 2 KiB receive window to
 * 127.0.0.1:`port`, each pipelining `repeat` GETs of `path`, never reading.
 */
export async function holdSlowReaders(port: number, count: number, repeat: number, path: string, from = '127.0.0.1'): Promise<HeldReaders> {
  const { line, child } = await python('hold', port, count, repeat, path, from);
  return { connected: Number(line.split(' ')[1]), stop: () => void child.kill() };
}

/**
 * One connection with a `buffer`-byte receive window pipelining `repeat` GETs of `path`, reading
 * `step` bytes every `intervalMs` until it has every answer: whether it got them all, or was cut.
 */
export async function readInSteps(
  port: number,
  repeat: number,
  path: string,
  { buffer, step, intervalMs }: { buffer: number; step: number; intervalMs: number },
): Promise<{ complete: boolean; answers: number; bytes: number }> {
  const { line } = await python('read', port, repeat, path, buffer, step, intervalMs / 1000);
  const [state, answers, bytes] = line.split(' ');
  return { complete: state === 'complete', answers: Number(answers), bytes: Number(bytes) };
}
