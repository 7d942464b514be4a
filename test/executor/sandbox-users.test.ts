import { allocateSandboxUsers, processUidBase, releaseSandboxUsers, UID_SPACE_START, UIDS_PER_PROCESS } from '../../adapters/executor/sandbox-users';

describe('sandbox users', () => {
  it('gives two processes disjoint blocks of uids, all below 2^31', () => {
    const a = processUidBase(1234);
    const b = processUidBase(1235);
    expect(b - a).toBe(UIDS_PER_PROCESS);
    expect(processUidBase(1)).toBeGreaterThan(UID_SPACE_START);
    expect(processUidBase((1 << 22) - 1) + UIDS_PER_PROCESS - 1).toBeLessThan(2 ** 31);
    expect(() => processUidBase(1 << 22)).toThrow(/unexpected pid/);
  });

  it('hands out users of this process only, never one held twice, and reuses released ones', () => {
    const base = processUidBase();
    const first = allocateSandboxUsers(3);
    const second = allocateSandboxUsers(2);
    const ids = [...first, ...second].map((u) => u.uid);

    expect(new Set(ids).size).toBe(5);
    expect(ids.every((id) => id >= base && id < base + UIDS_PER_PROCESS)).toBe(true);
    releaseSandboxUsers(first);
    const again = allocateSandboxUsers(3);
    expect(again.map((u) => u.uid).sort()).toEqual(first.map((u) => u.uid).sort());
    releaseSandboxUsers([...second, ...again]);
  });

  it('refuses more slots at once than the block holds', () => {
    expect(() => allocateSandboxUsers(UIDS_PER_PROCESS + 1)).toThrow(/at most 128 sandbox slots/);
  });
});
