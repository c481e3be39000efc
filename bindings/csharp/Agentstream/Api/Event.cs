namespace Agentstream
{
    /// <summary>
    /// One delivery of a run, in order: a numbered item of one of the four channels
    /// (<see cref="Item"/>), or a hook event derived from the item before it (<see cref="Hook"/>).
    /// What <see cref="Evolve.On"/> handlers receive and what a <see cref="RunStream"/> yields.
    /// </summary>
    public sealed class Event
    {
        internal Event(Envelope item)
        {
            Item = item;
        }

        internal Event(AgentEvent hook)
        {
            Hook = hook;
        }

        /// <summary>The numbered item (run id, sequence, channel, payload); null for a hook event.</summary>
        public Envelope Item { get; private set; }

        /// <summary>The hook event; null for an item.</summary>
        public AgentEvent Hook { get; private set; }

        /// <summary>Whether this is a hook event.</summary>
        public bool IsHook
        {
            get { return Hook != null; }
        }

        /// <summary>The run it belongs to.</summary>
        public string RunId
        {
            get { return Item != null ? Item.RunId : Hook.RunId; }
        }

        /// <summary>The item's sequence number (one gapless sequence from 0 over all channels); a hook's is its item's.</summary>
        public ulong Sequence
        {
            get { return Item != null ? Item.Sequence : Hook.Sequence; }
        }

        /// <summary>The item's channel; null for a hook event.</summary>
        public Channel? Channel
        {
            get { return Item != null ? Item.Channel : (Channel?)null; }
        }

        /// <summary>On the <c>content</c> channel: the parsed event (the seed's shape); otherwise null.</summary>
        public OutputEvent Content
        {
            get { return Item == null ? null : Item.Event as OutputEvent; }
        }

        /// <summary>On the <c>lifecycle</c> channel: the state transition; otherwise null.</summary>
        public LifecycleEvent Lifecycle
        {
            get { return Item == null ? null : Item.Event as LifecycleEvent; }
        }

        /// <summary>On the <c>stdout</c> and <c>stderr</c> channels: the text as the harness printed it (a stdout line with its newline); otherwise null.</summary>
        public string Text
        {
            get { return Item == null ? null : Item.Event as string; }
        }

        /// <summary>The delivery as JSON (<c>{"item": …}</c> or <c>{"hook": …}</c>, the library's form).</summary>
        public override string ToString()
        {
            var w = new JsonWriter();
            w.BeginObject();
            if (Item != null)
            {
                w.Key("item");
                WireCodec.WriteEnvelope(w, Item);
            }
            else
            {
                w.Key("hook");
                WireCodec.WriteAgentEvent(w, Hook);
            }
            w.EndObject();
            return w.ToString();
        }
    }
}
