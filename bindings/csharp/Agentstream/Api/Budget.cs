using System;
using Agentstream.Interop;

namespace Agentstream
{
    /// <summary>
    /// A byte allowance shared by the runs of every <see cref="Evolve"/> it is set on
    /// (<see cref="Evolve.SetBudget"/>): each run takes one of <c>maxRuns</c> permits for its life and
    /// gets <c>totalBytes / maxRuns</c> as its byte budget; starting a run when every permit is taken
    /// is an <see cref="InvalidArgumentException"/>. Dispose it when done.
    /// </summary>
    public sealed class Budget : IDisposable
    {
        readonly BudgetHandle handle;

        /// <summary>A budget of <paramref name="totalBytes"/> for up to <paramref name="maxRuns"/> concurrent runs.</summary>
        public Budget(long totalBytes, int maxRuns)
        {
            if (totalBytes < 0 || maxRuns < 0)
            {
                throw new InvalidArgumentException("totalBytes and maxRuns must not be negative, got " + totalBytes + " and " + maxRuns);
            }
            BudgetHandle h;
            Native.Check(Native.agentstream_budget_new((UIntPtr)(ulong)totalBytes, (UIntPtr)(uint)maxRuns, out h));
            handle = h;
        }

        internal BudgetHandle Live()
        {
            if (handle.IsClosed)
            {
                throw new InvalidHandleException("this Budget was disposed: create a new one");
            }
            return handle;
        }

        /// <summary>How many runs hold a permit now.</summary>
        public int Active
        {
            get
            {
                UIntPtr n;
                Native.Check(Native.agentstream_budget_active(Live(), out n));
                return (int)n.ToUInt64();
            }
        }

        /// <summary>Frees the budget (runs holding a permit keep it). Calling it again does nothing.</summary>
        public void Dispose()
        {
            handle.Dispose();
        }
    }
}
