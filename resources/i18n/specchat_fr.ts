<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="fr_FR" sourcelanguage="en">
<context>
    <name>AnswerWidget</name>
    <message>
        <source>Tokens</source>
        <translation>Jetons</translation>
    </message>
    <message>
        <source>Show the answer token by token, highlighted by where each token came from, instead of rendered as Markdown</source>
        <translation>Afficher la réponse jeton par jeton, colorée selon l’origine de chaque jeton, au lieu du rendu Markdown</translation>
    </message>
    <message>
        <source>Copy</source>
        <translation>Copier</translation>
    </message>
    <message>
        <source>Copy this answer as Markdown</source>
        <translation>Copier cette réponse en Markdown</translation>
    </message>
    <message>
        <source>Regenerate</source>
        <translation>Régénérer</translation>
    </message>
    <message>
        <source>Answer the same question again with the current settings (replaces this answer and the messages after it)</source>
        <translation>Répondre de nouveau à la même question avec les réglages actuels (remplace cette réponse et les messages qui la suivent)</translation>
    </message>
    <message>
        <source>Continue</source>
        <translation>Continuer</translation>
    </message>
    <message>
        <source>Go on generating this cut answer from where it stopped</source>
        <translation>Reprendre la génération de cette réponse interrompue là où elle s’est arrêtée</translation>
    </message>
    <message>
        <source>Compare</source>
        <translation>Comparer</translation>
    </message>
    <message>
        <source>Run this answer again the other way (with / without speculation) and compare</source>
        <translation>Relancer cette réponse dans l’autre mode (avec / sans spéculation) et comparer</translation>
    </message>
    <message>
        <source>Why?</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Why was this answer faster or slower? Acceptance, costs, charts</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Assistant · {0}</source>
        <translation>Assistant · {0}</translation>
    </message>
</context>
<context>
    <name>Charts</name>
    <message>
        <source>Acceptance by draft position</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>draft position</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>accepted</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>of drafts judged (earlier ones accepted)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>of drafts proposed</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>α = {0}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Tokens per target pass</source>
        <translation type="unfinished">Jetons par passe du modèle cible</translation>
    </message>
    <message>
        <source>tokens from one pass</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>passes</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Timeline of target passes</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>wall-clock time (s)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>drafting</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>target pass (verify)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>speculative</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>plain</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>What if the draft agreed more often?</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>acceptance α</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>speed-up over plain decoding (×)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>this run (its mix of draft lengths)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>k = {0} (this run)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>k = {0} every pass (cost interpolated)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>k = {0} every pass</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>break-even</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>measured</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>predicted</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>ChatController</name>
    <message>
        <source>Thinking…</source>
        <translation>Réflexion…</translation>
    </message>
    <message>
        <source>Waiting for the model to load…</source>
        <translation>En attente du chargement du modèle…</translation>
    </message>
    <message>
        <source>Could not save the conversation: {0}</source>
        <translation>Impossible d’enregistrer la conversation : {0}</translation>
    </message>
</context>
<context>
    <name>ChatView</name>
    <message>
        <source>Ask something. Tokens the drafter guessed right and the target accepted are highlighted and underlined; hover a token to see where it came from.</source>
        <translation>Posez une question. Les jetons bien devinés par le brouillon et acceptés par le modèle cible sont surlignés et soulignés ; survolez un jeton pour voir d’où il vient.</translation>
    </message>
</context>
<context>
    <name>CompareDialog</name>
    <message>
        <source>Compare: with and without speculation</source>
        <translation>Comparer : avec et sans spéculation</translation>
    </message>
    <message>
        <source>With speculation — {0}</source>
        <translation>Avec spéculation — {0}</translation>
    </message>
    <message>
        <source>Without speculation — target only</source>
        <translation>Sans spéculation — modèle cible seul</translation>
    </message>
    <message>
        <source>Character-level differences (struck through: only with speculation; underlined: only without)</source>
        <translation>Différences caractère par caractère (barré : seulement avec spéculation ; souligné : seulement sans)</translation>
    </message>
    <message>
        <source>Wall time</source>
        <translation>Durée réelle</translation>
    </message>
    <message>
        <source>{0:.2f} s</source>
        <translation>{0:.2f} s</translation>
    </message>
    <message>
        <source>Tokens/s</source>
        <translation>Jetons/s</translation>
    </message>
    <message>
        <source>New tokens</source>
        <translation>Nouveaux jetons</translation>
    </message>
    <message>
        <source>Target passes</source>
        <translation>Passes du modèle cible</translation>
    </message>
    <message>
        <source>Tokens per target pass</source>
        <translation>Jetons par passe du modèle cible</translation>
    </message>
    <message>
        <source>Draft acceptance</source>
        <translation>Taux d’acceptation du brouillon</translation>
    </message>
    <message>
        <source>No differences.</source>
        <translation>Aucune différence.</translation>
    </message>
    <message>
        <source>{ratio:.1f}× faster</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>{ratio:.1f}× slower</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>about as fast</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>speed unknown</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Identical answer · {speed}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Different sample · {speed}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Answers differ from token {token} · {speed}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>They first differ at token {token} (character {char})</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Both runs produced exactly the same tokens: speculation changed the speed, not the answer.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>{where}, where the target&apos;s two best tokens were only {margin} logits apart, within {threshold} ({steps} steps of {dtype} at a logit of {top}): a near tie resolved differently by batched arithmetic — numerics, not a bug.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>{where}. These answers were sampled without seed-invariant mode, so different text is expected; the distribution is the same.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>{where}, where the target was confident: its two best tokens were {margin} logits apart, more than {dtype} rounding can flip ({threshold}). Greedy decoding should never diverge like this: this looks like a bug, please report it.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Speculation was slower here: only {acceptance} of the drafts were accepted ({per_pass} tokens per target pass), too few to pay for drafting and verifying them.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Speculation was slower here although {acceptance} of the drafts were accepted: each step spent as long drafting as {overhead} plain target steps ({c} per draft pass), which ate the gain of {per_pass} tokens per target pass.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Speculation was slower here although {acceptance} of the drafts were accepted: one verify pass over the drafts cost {v} plain target steps, which ate the gain of {per_pass} tokens per target pass.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>This answer was saved without a record of the models that made it, so both runs were made again with the models loaded now ({now}).</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>This answer was made by {then}; the models loaded now are {now}. Both runs were made again with the loaded models: this compares them, not the stored answer.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The run with speculation differs from the stored answer from token {token}, although the same models and settings made both.</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>Composer</name>
    <message>
        <source>Type a message — Enter sends, Shift+Enter for a new line</source>
        <translation>Écrivez un message — Entrée pour envoyer, Maj+Entrée pour aller à la ligne</translation>
    </message>
</context>
<context>
    <name>ContextMeter</name>
    <message>
        <source>Prompt and answer tokens of this conversation against what the target model can hold</source>
        <translation>Jetons des messages et des réponses de cette conversation, rapportés à ce que le modèle cible peut contenir</translation>
    </message>
</context>
<context>
    <name>ConversationPanel</name>
    <message>
        <source>Search conversations</source>
        <translation>Rechercher dans les conversations</translation>
    </message>
    <message>
        <source>Shows the chats whose title or messages contain every word</source>
        <translation>Affiche les conversations dont le titre ou les messages contiennent tous les mots</translation>
    </message>
    <message>
        <source>Undo</source>
        <translation>Annuler</translation>
    </message>
    <message>
        <source>Deleted “{0}”.</source>
        <translation>« {0} » supprimée.</translation>
    </message>
    <message>
        <source>New chat</source>
        <translation>Nouvelle conversation</translation>
    </message>
    <message>
        <source>Export conversation</source>
        <translation>Exporter la conversation</translation>
    </message>
    <message>
        <source>Markdown (*.md);;JSON (*.json)</source>
        <translation>Markdown (*.md);;JSON (*.json)</translation>
    </message>
    <message>
        <source>Rename</source>
        <translation>Renommer</translation>
    </message>
    <message>
        <source>Export…</source>
        <translation>Exporter…</translation>
    </message>
    <message>
        <source>Delete conversation</source>
        <translation>Supprimer la conversation</translation>
    </message>
</context>
<context>
    <name>EngineWorker</name>
    <message>
        <source>Warming up…</source>
        <translation>Mise en route…</translation>
    </message>
    <message>
        <source>the model is not loaded</source>
        <translation>le modèle n’est pas chargé</translation>
    </message>
    <message>
        <source>No model is loaded: {0}</source>
        <translation>Aucun modèle n’est chargé : {0}</translation>
    </message>
    <message>
        <source>Out of memory. Try a smaller model, fewer new tokens, another dtype or the CPU.</source>
        <translation>Mémoire insuffisante. Essayez un modèle plus petit, moins de nouveaux jetons, un autre type de données ou le CPU.</translation>
    </message>
    <message>
        <source>Unexpected error in the engine ({0}: {1}). The app keeps running.</source>
        <translation>Erreur inattendue dans le moteur ({0} : {1}). L’application continue de fonctionner.</translation>
    </message>
</context>
<context>
    <name>ExplainDialog</name>
    <message>
        <source>Why was it faster or slower?</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Run comparison</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Run this answer again without speculation, to measure the real speed-up</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Acceptance α (per position the target judged)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Drafts accepted, of all proposed</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Tokens per target pass</source>
        <translation type="unfinished">Jetons par passe du modèle cible</translation>
    </message>
    <message>
        <source>Cost of drafting one token, c (× a plain pass)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Cost of a pass over {0} tokens, v({1}) (× a plain pass)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Predicted speed-up</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Measured speed-up (decode tokens per second)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Cost of a plain pass</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>{0} ms, measured on the plain run</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>{0} ms, from this answer&apos;s own passes that checked no draft (no comparison yet)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>unknown: this answer has no plain pass; run a comparison to measure it</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Acceptance</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Timeline</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>What if</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>What if: this run checked no drafts</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>What if: needs the cost of a plain pass (run a comparison)</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>Explanation</name>
    <message>
        <source>This answer&apos;s passes were not kept (it was restored from disk): run a comparison to explain it.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>No draft was checked in this run, so every target pass produced one token and speculation could not help.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The target agreed with the draft at {alpha} of the positions it checked ({tokens} tokens per pass)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>a pass checking {k} drafts cost {verify} a plain step, and drafting them {draft}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>run a comparison to measure what a plain step costs</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>so speculation gained {percent}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>so speculation lost {percent}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>so speculation should gain {percent}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>so speculation should lose {percent}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>held back most by low acceptance</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>held back most by the cost of drafting</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>held back most by the cost of verifying several tokens at once</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>Export</name>
    <message>
        <source>New chat</source>
        <translation>Nouvelle conversation</translation>
    </message>
    <message>
        <source>SpecChat conversation</source>
        <translation>Conversation SpecChat</translation>
    </message>
    <message>
        <source>System prompt</source>
        <translation>Consigne système</translation>
    </message>
    <message>
        <source>You</source>
        <translation>Vous</translation>
    </message>
    <message>
        <source>Assistant</source>
        <translation>Assistant</translation>
    </message>
    <message>
        <source>Export to a .md or .json file (got &apos;{0}&apos;).</source>
        <translation>Exportez vers un fichier .md ou .json (reçu : « {0} »).</translation>
    </message>
    <message>
        <source>Could not export to &apos;{0}&apos;: {1}</source>
        <translation>Impossible d’exporter vers « {0} » : {1}</translation>
    </message>
</context>
<context>
    <name>MainWindow</name>
    <message>
        <source>SpecChat</source>
        <translation>SpecChat</translation>
    </message>
    <message>
        <source>Main</source>
        <translation>Principale</translation>
    </message>
    <message>
        <source>New chat</source>
        <translation>Nouvelle conversation</translation>
    </message>
    <message>
        <source>Settings…</source>
        <translation>Réglages…</translation>
    </message>
    <message>
        <source>Models…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The models on this computer, and which can draft for which</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Speculation</source>
        <translation>Spéculation</translation>
    </message>
    <message>
        <source>Draft tokens and verify them in one target pass</source>
        <translation>Proposer des jetons en brouillon et les vérifier en une seule passe du modèle cible</translation>
    </message>
    <message>
        <source>Show rejected drafts</source>
        <translation>Afficher les brouillons rejetés</translation>
    </message>
    <message>
        <source>System prompt (optional)</source>
        <translation>Consigne système (facultative)</translation>
    </message>
    <message>
        <source>Dismiss</source>
        <translation>Fermer</translation>
    </message>
    <message>
        <source>Send</source>
        <translation>Envoyer</translation>
    </message>
    <message>
        <source>No model loaded</source>
        <translation>Aucun modèle chargé</translation>
    </message>
    <message>
        <source>Stop</source>
        <translation>Arrêter</translation>
    </message>
    <message>
        <source>Stop generating (Esc)</source>
        <translation>Arrêter la génération (Échap)</translation>
    </message>
    <message>
        <source>Send (Enter)</source>
        <translation>Envoyer (Entrée)</translation>
    </message>
    <message>
        <source>The model library is not available in this window.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Fix them in Settings.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>the bundled model</source>
        <translation>le modèle fourni</translation>
    </message>
    <message>
        <source>Loading {0}…</source>
        <translation>Chargement de {0}…</translation>
    </message>
    <message>
        <source>Target: {0} · Drafter: {1}</source>
        <translation>Cible : {0} · Brouillon : {1}</translation>
    </message>
    <message>
        <source>Target: {0} · Speculation off</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>the requested models could not be loaded (see Settings)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>{0} saved conversation(s) could not be read and were skipped; the files are kept:</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>… and {0} more</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Could not load the models: {0}</source>
        <translation>Impossible de charger les modèles : {0}</translation>
    </message>
    <message>
        <source>Still using the models loaded before.</source>
        <translation>Les modèles chargés auparavant restent utilisés.</translation>
    </message>
</context>
<context>
    <name>MarkdownView</name>
    <message>
        <source>Copy code block</source>
        <translation>Copier le bloc de code</translation>
    </message>
    <message>
        <source>Copy code</source>
        <translation>Copier le code</translation>
    </message>
</context>
<context>
    <name>ModelSourcePicker</name>
    <message>
        <source>Bundled default (SmolLM2-135M-Instruct)</source>
        <translation>Modèle fourni par défaut (SmolLM2-135M-Instruct)</translation>
    </message>
    <message>
        <source>Model folder…</source>
        <translation>Dossier de modèle…</translation>
    </message>
    <message>
        <source>GGUF file…</source>
        <translation>Fichier GGUF…</translation>
    </message>
    <message>
        <source>Model in the local Hugging Face cache</source>
        <translation>Modèle du cache Hugging Face local</translation>
    </message>
    <message>
        <source>Prompt lookup (no model)</source>
        <translation>Recherche dans le prompt (sans modèle)</translation>
    </message>
    <message>
        <source>None</source>
        <translation>Aucun</translation>
    </message>
    <message>
        <source>Browse…</source>
        <translation>Parcourir…</translation>
    </message>
    <message>
        <source>ORG/NAME (no model found in the cache)</source>
        <translation>ORG/NOM (aucun modèle trouvé dans le cache)</translation>
    </message>
    <message>
        <source>Choose a GGUF file</source>
        <translation>Choisir un fichier GGUF</translation>
    </message>
    <message>
        <source>GGUF files (*.gguf)</source>
        <translation>Fichiers GGUF (*.gguf)</translation>
    </message>
    <message>
        <source>Choose a model folder</source>
        <translation>Choisir un dossier de modèle</translation>
    </message>
</context>
<context>
    <name>ModelsDialog</name>
    <message>
        <source>Models</source>
        <translation type="unfinished">Modèles</translation>
    </message>
    <message>
        <source>Name</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Architecture</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Parameters</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Size</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Data type</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Context</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Tokenizer</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>As a draft</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Number of weights, counted from the file headers</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>How the weights are stored: a float type or a quantisation</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The longest conversation the model was built for, in tokens</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>How text is cut into tokens, and how many tokens it knows</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Whether the model can draft for the chosen target (same text → same token ids)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Rescan</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Add folder…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Add GGUF file…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Choose a target model in the list.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Technical detail</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Target:</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Draft:</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Recent pairs:</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Use this pair</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Looking for models…</source>
        <translation type="unfinished"></translation>
    </message>
    <message numerus="yes">
        <source>%n model(s) found</source>
        <translation type="unfinished">
            <numerusform></numerusform>
            <numerusform></numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n cannot be used</source>
        <translation type="unfinished">
            <numerusform></numerusform>
            <numerusform></numerusform>
        </translation>
    </message>
    <message>
        <source>Cannot be used</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Target</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Checking</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Checking which models can draft for {0}…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Compatible</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Technical detail: {0}</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Suggested draft</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>(suggested)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Prompt lookup (no draft model)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>No drafter</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>{0} compatible, {1} not.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Prompt lookup drafts by copying from the conversation; it needs no second model.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>No compatible model is at least {0:g}× smaller than the target.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Without a drafter the target writes every token itself.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>It has {0:.1f}× fewer parameters than the target.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Choose a recent pair…</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>(none yet)</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>That model is no longer on this computer.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>prompt lookup</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>no drafter</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Add a model folder</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Add a GGUF file</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>GGUF models (*.gguf)</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>SettingsDialog</name>
    <message>
        <source>Settings</source>
        <translation>Réglages</translation>
    </message>
    <message>
        <source>Models</source>
        <translation>Modèles</translation>
    </message>
    <message>
        <source>Speculation</source>
        <translation>Spéculation</translation>
    </message>
    <message>
        <source>Decoding</source>
        <translation>Décodage</translation>
    </message>
    <message>
        <source>Settings apply to the next message.</source>
        <translation>Les réglages s’appliquent au prochain message.</translation>
    </message>
    <message>
        <source>same as target</source>
        <translation>comme le modèle cible</translation>
    </message>
    <message>
        <source>Allow pickle checkpoints (can run arbitrary code)</source>
        <translation>Autoriser les checkpoints pickle (peuvent exécuter du code arbitraire)</translation>
    </message>
    <message>
        <source>Target model:</source>
        <translation>Modèle cible :</translation>
    </message>
    <message>
        <source>Draft source:</source>
        <translation>Source du brouillon :</translation>
    </message>
    <message>
        <source>Device:</source>
        <translation>Processeur :</translation>
    </message>
    <message>
        <source>Data type:</source>
        <translation>Type de données :</translation>
    </message>
    <message>
        <source>Draft data type:</source>
        <translation>Type de données du brouillon :</translation>
    </message>
    <message>
        <source>Changing a model reloads it in the background; the chat stays usable.</source>
        <translation>Changer de modèle le recharge en arrière-plan ; la conversation reste utilisable.</translation>
    </message>
    <message>
        <source>Use speculative decoding</source>
        <translation>Utiliser le décodage spéculatif</translation>
    </message>
    <message>
        <source>Adapt the draft length (grow on success, shrink on rejection)</source>
        <translation>Adapter la longueur du brouillon (plus long en cas de succès, plus court en cas de rejet)</translation>
    </message>
    <message>
        <source>Draft length k:</source>
        <translation>Longueur du brouillon k :</translation>
    </message>
    <message>
        <source>Largest adaptive k:</source>
        <translation>k adaptatif maximal :</translation>
    </message>
    <message>
        <source>Confidence threshold:</source>
        <translation>Seuil de confiance :</translation>
    </message>
    <message>
        <source>A draft model stops drafting when its own probability falls below the threshold (0: off).</source>
        <translation>Un modèle brouillon cesse de proposer des jetons quand sa propre probabilité passe sous le seuil (0 : désactivé).</translation>
    </message>
    <message>
        <source>Greedy (always the most likely token)</source>
        <translation>Glouton (toujours le jeton le plus probable)</translation>
    </message>
    <message>
        <source>Sampling</source>
        <translation>Échantillonnage</translation>
    </message>
    <message>
        <source>Standard (same distribution as the target)</source>
        <translation>Standard (même distribution que le modèle cible)</translation>
    </message>
    <message>
        <source>Seed-invariant (same text per seed, with or without speculation)</source>
        <translation>Invariant par graine (même texte pour une graine, avec ou sans spéculation)</translation>
    </message>
    <message>
        <source>Temperature:</source>
        <translation>Température :</translation>
    </message>
    <message>
        <source>Top-p:</source>
        <translation>Top-p :</translation>
    </message>
    <message>
        <source>Top-k (0: off):</source>
        <translation>Top-k (0 : désactivé) :</translation>
    </message>
    <message>
        <source>Seed:</source>
        <translation>Graine :</translation>
    </message>
    <message>
        <source>Sampling mode:</source>
        <translation>Mode d’échantillonnage :</translation>
    </message>
    <message>
        <source>Max new tokens:</source>
        <translation>Nouveaux jetons au maximum :</translation>
    </message>
    <message>
        <source>Automatic (system)</source>
        <translation>Automatique (système)</translation>
    </message>
    <message>
        <source>Language:</source>
        <translation>Langue :</translation>
    </message>
    <message>
        <source>(applies at the next start)</source>
        <translation>(prend effet au prochain démarrage)</translation>
    </message>
    <message>
        <source>{0} (not available here)</source>
        <translation>{0} (non disponible ici)</translation>
    </message>
    <message>
        <source>target model</source>
        <translation>modèle cible</translation>
    </message>
    <message>
        <source>draft source</source>
        <translation>source du brouillon</translation>
    </message>
    <message>
        <source>Choose a path or model id for the {0}.</source>
        <translation>Choisissez un chemin ou un identifiant de modèle pour : {0}.</translation>
    </message>
    <message>
        <source>These models could not be loaded: {0}</source>
        <translation type="unfinished"></translation>
    </message>
</context>
<context>
    <name>Stats</name>
    <message>
        <source>{0} new tokens</source>
        <translation>{0} nouveaux jetons</translation>
    </message>
    <message>
        <source>{0:.1f} tokens/s</source>
        <translation>{0:.1f} jetons/s</translation>
    </message>
    <message>
        <source>first token after {0:.2f} s</source>
        <translation>premier jeton après {0:.2f} s</translation>
    </message>
    <message>
        <source>acceptance {0:.0%}</source>
        <translation>acceptation {0:.0%}</translation>
    </message>
    <message>
        <source>{0:.2f} tokens per target pass</source>
        <translation>{0:.2f} jetons par passe du modèle cible</translation>
    </message>
    <message>
        <source>{0} target passes ({1} saved vs one per token)</source>
        <translation>{0} passes du modèle cible ({1} économisées par rapport à une par jeton)</translation>
    </message>
    <message>
        <source>with speculation ({0})</source>
        <translation>avec spéculation ({0})</translation>
    </message>
    <message>
        <source>target model only, no speculation</source>
        <translation>modèle cible seul, sans spéculation</translation>
    </message>
    <message>
        <source>Stopped: the answer is partial.</source>
        <translation>Arrêtée : la réponse est partielle.</translation>
    </message>
    <message>
        <source>Reached the max new tokens limit.</source>
        <translation>Limite de nouveaux jetons atteinte.</translation>
    </message>
    <message>
        <source>Context: {0} tokens</source>
        <translation>Contexte : {0} jetons</translation>
    </message>
    <message>
        <source>Context: {0} of {1} tokens ({2:.0%})</source>
        <translation>Contexte : {0} jetons sur {1} ({2:.0%})</translation>
    </message>
    <message>
        <source>The context window is full: start a new chat (answers here will be cut).</source>
        <translation>La fenêtre de contexte est pleine : commencez une nouvelle conversation (les réponses ici seront tronquées).</translation>
    </message>
    <message>
        <source>The conversation fills {0:.0%} of the context window: start a new chat soon, or the next answers will be cut.</source>
        <translation>La conversation occupe {0:.0%} de la fenêtre de contexte : commencez bientôt une nouvelle conversation, sinon les prochaines réponses seront tronquées.</translation>
    </message>
</context>
<context>
    <name>TokenLegend</name>
    <message>
        <source>Legend:</source>
        <translation>Légende :</translation>
    </message>
    <message>
        <source>Hover a token for its source, pass and probabilities.</source>
        <translation>Survolez un jeton pour voir sa source, sa passe et ses probabilités.</translation>
    </message>
    <message>
        <source>accepted draft token (underlined)</source>
        <translation>jeton du brouillon accepté (souligné)</translation>
    </message>
    <message>
        <source>token from the target model</source>
        <translation>jeton du modèle cible</translation>
    </message>
    <message>
        <source>rejected draft (struck through)</source>
        <translation>brouillon rejeté (barré)</translation>
    </message>
</context>
<context>
    <name>TokenTextView</name>
    <message>
        <source>Draft token, accepted by the target in pass {0}</source>
        <translation>Jeton du brouillon, accepté par le modèle cible à la passe {0}</translation>
    </message>
    <message>
        <source>Draft token proposed before pass {0}, rejected by the target</source>
        <translation>Jeton du brouillon proposé avant la passe {0}, rejeté par le modèle cible</translation>
    </message>
    <message>
        <source>Target token, from target pass {0}</source>
        <translation>Jeton du modèle cible, issu de la passe {0}</translation>
    </message>
    <message>
        <source>Text: {0}</source>
        <translation>Texte : {0}</translation>
    </message>
    <message>
        <source>Target probability: {0:.3f}</source>
        <translation>Probabilité selon le modèle cible : {0:.3f}</translation>
    </message>
    <message>
        <source>Draft probability: {0:.3f}</source>
        <translation>Probabilité selon le brouillon : {0:.3f}</translation>
    </message>
    <message>
        <source>Target top-1 margin (logits): {0:.2f}</source>
        <translation>Marge du meilleur jeton du modèle cible (logits) : {0:.2f}</translation>
    </message>
</context>
<context>
    <name>UserMessageWidget</name>
    <message>
        <source>You</source>
        <translation>Vous</translation>
    </message>
    <message>
        <source>Edit</source>
        <translation>Modifier</translation>
    </message>
    <message>
        <source>Change this message and send it again (later messages are replaced)</source>
        <translation>Modifier ce message et le renvoyer (les messages suivants sont remplacés)</translation>
    </message>
    <message>
        <source>Send</source>
        <translation>Envoyer</translation>
    </message>
    <message>
        <source>Cancel</source>
        <translation>Annuler</translation>
    </message>
</context>
<context>
    <name>catalog</name>
    <message>
        <source>These two models share a tokenizer: the draft can be used.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>These two models use different tokenizers.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The draft&apos;s vocabulary is larger than the target&apos;s: it could propose tokens the target does not know.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The draft&apos;s vocabulary is smaller than the target&apos;s: their tokenizers are related but not the same.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The two vocabularies hold the same words, but some have different numbers.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The two tokenizers split the same text into different tokens.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The two models end an answer with different tokens.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>The tokenizer of one of the two models could not be read.</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Compatible</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Different tokenizer</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Larger vocabulary</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Smaller vocabulary</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Different token ids</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Splits text differently</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Different end token</source>
        <translation type="unfinished"></translation>
    </message>
    <message>
        <source>Tokenizer unreadable</source>
        <translation type="unfinished"></translation>
    </message>
</context>
</TS>
