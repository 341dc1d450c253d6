// A human-in-the-loop card answered from the page: choice, input, confirm or form.
import { useState } from "preact/hooks";
import { gql } from "./api";

const ANSWER = `mutation($id: String!, $owner: String, $cardId: String!, $answer: JSON!) {
  answerCard(id: $id, ownerId: $owner, cardId: $cardId, answer: $answer) { operation { status } }
}`;

type Option = { value: string; label: string };
type Field = { name: string; label: string; required?: boolean; field: { type: string; options?: Option[] } };
/** A card as the server stores it. */
export type Card = {
  cardId: string;
  title: string;
  body?: string;
  kind: "choice" | "input" | "confirm" | "form";
  options?: Option[];
  multiple?: boolean;
  required?: boolean;
  fields?: Field[];
};

/** The card of `owner`'s run `operationId` and its answer form; `onAnswered` after the server
 * took the answer. */
export function CardForm({
  operationId,
  owner,
  card,
  onAnswered,
}: {
  operationId: string;
  owner?: string;
  card: Card;
  onAnswered?: () => void;
}) {
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const send = async (answer: unknown) => {
    setBusy(true);
    setError(null);
    try {
      await gql(ANSWER, { id: operationId, owner, cardId: card.cardId, answer });
      onAnswered?.();
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  };
  const submit = (e: Event) => {
    e.preventDefault();
    const form = new FormData(e.target as HTMLFormElement);
    if (card.kind === "choice") send({ kind: "choice", values: form.getAll("choice").map(String) });
    else if (card.kind === "input") send({ kind: "input", text: String(form.get("text") ?? "") });
    else if (card.kind === "form") {
      const values: Record<string, unknown> = {};
      for (const f of card.fields ?? []) {
        const raw = form.get(f.name);
        if (f.field.type === "boolean") values[f.name] = raw === "on";
        else if (raw === null || raw === "") continue;
        else if (f.field.type === "number") values[f.name] = Number(raw);
        else values[f.name] = String(raw);
      }
      send({ kind: "form", values });
    }
  };
  return (
    <form class="card" data-card={card.cardId} data-operation={operationId} onSubmit={submit} aria-label={`Card: ${card.title}`}>
      <h3>{card.title}</h3>
      {card.body && <p>{card.body}</p>}
      {card.kind === "confirm" && (
        <div class="actions">
          <button type="button" disabled={busy} onClick={() => send({ kind: "confirm", confirmed: true })}>
            Yes
          </button>
          <button type="button" disabled={busy} onClick={() => send({ kind: "confirm", confirmed: false })}>
            No
          </button>
        </div>
      )}
      {card.kind === "choice" && (
        <fieldset>
          <legend>{card.multiple ? "Pick any" : "Pick one"}</legend>
          {(card.options ?? []).map((o) => (
            <label key={o.value}>
              <input type={card.multiple ? "checkbox" : "radio"} name="choice" value={o.value} required={!card.multiple} /> {o.label}
            </label>
          ))}
        </fieldset>
      )}
      {card.kind === "input" && (
        <label>
          Answer <textarea name="text" required={card.required} />
        </label>
      )}
      {card.kind === "form" &&
        (card.fields ?? []).map((f) => (
          <label key={f.name}>
            {f.label}{" "}
            {f.field.type === "boolean" ? (
              <input type="checkbox" name={f.name} />
            ) : f.field.type === "choice" ? (
              <select name={f.name} required={f.required}>
                <option value="" />
                {(f.field.options ?? []).map((o) => (
                  <option value={o.value}>{o.label}</option>
                ))}
              </select>
            ) : (
              <input type={f.field.type === "number" ? "number" : "text"} name={f.name} required={f.required} />
            )}
          </label>
        ))}
      {card.kind !== "confirm" && (
        <button type="submit" disabled={busy}>
          Answer
        </button>
      )}
      {error && <p role="alert" class="error">{error}</p>}
    </form>
  );
}
