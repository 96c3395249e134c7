"""Print a gpufault operand line for a torch tensor (stderr, flushed); gpufault joins it to faults.
Usage:  from gpufault_operands import operand;  operand("A", a);  operand("B", b)"""
import sys


def operand(name, t, file=sys.stderr):
    """`gpufault.operand name=.. ptr=.. end=..`: [data_ptr, end of its storage) in bytes."""
    s = t.untyped_storage()
    print(f"gpufault.operand name={name} ptr=0x{t.data_ptr():x} end=0x{s.data_ptr() + s.nbytes():x} "
          f"shape=({','.join(map(str, t.shape))}) stride=({','.join(map(str, t.stride()))}) dtype={t.dtype}",
          file=file, flush=True)
