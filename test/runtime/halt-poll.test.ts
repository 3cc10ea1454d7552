// The start-up note about guest halt-polling (src/runtime/halt-poll.ts): only a KVM guest on
// the haltpoll cpuidle driver and governor with guest_halt_poll_ns 0 gets it. The cases give
// the sysfs files' texts (null: no such file), so they hold on any host.
import t from 'tap';
import { CPUIDLE_DRIVER, CPUIDLE_GOVERNOR, HALT_POLL_NS, haltsWithoutPolling, type ReadText } from '../../src/runtime/halt-poll.ts';

const host = (driver: string | null, ns: string | null, governor: string | null = driver): ReadText => (path) =>
  path === CPUIDLE_DRIVER ? driver : path === CPUIDLE_GOVERNOR ? governor : path === HALT_POLL_NS ? ns : null;

t.test('a guest whose idle vCPUs halt at once gets the note', async (t) => {
  t.equal(haltsWithoutPolling(host('haltpoll\n', '0\n')), true);
});

t.test('a guest that polls before halting, and a garbled value, get none', async (t) => {
  t.equal(haltsWithoutPolling(host('haltpoll\n', '200000\n')), false, "the kernel's default");
  t.equal(haltsWithoutPolling(host('haltpoll\n', '1\n')), false);
  t.equal(haltsWithoutPolling(host('haltpoll\n', 'off\n')), false);
  t.equal(haltsWithoutPolling(host('haltpoll\n', '')), false);
  t.equal(haltsWithoutPolling(host('haltpoll\n', null)), false, 'no haltpoll module parameters');
});

t.test('other cpuidle drivers and hosts without cpuidle get none', async (t) => {
  t.equal(haltsWithoutPolling(host('intel_idle\n', '0\n')), false, 'bare metal');
  t.equal(haltsWithoutPolling(host('acpi_idle\n', '0\n')), false);
  t.equal(haltsWithoutPolling(host('none\n', '0\n')), false);
  t.equal(haltsWithoutPolling(host(null, null)), false, 'not Linux, or no cpuidle');
  t.equal(haltsWithoutPolling(host('haltpoll\n', '0\n', 'menu\n')), false, 'the haltpoll driver under the menu governor: the value is not read');
  t.equal(haltsWithoutPolling(host('haltpoll\n', '0\n', null)), false, 'no governor file');
});
