/**
 * A network interface name as the engine accepts it (the spec's `interface` fields): 1 to 15
 * letters, digits, `_`, `.` or `-` (Linux's IFNAMSIZ less the NUL), and not `.` or `..` (Linux
 * refuses them too). Such a name may go into a path (`/sys/class/net/<name>/carrier`).
 */
export const INTERFACE_NAME_PATTERN = '^(?!\\.\\.?$)[A-Za-z0-9_.-]{1,15}$';

const INTERFACE_NAME = new RegExp(INTERFACE_NAME_PATTERN);

export function isInterfaceName(name: string): boolean {
  return INTERFACE_NAME.test(name);
}
